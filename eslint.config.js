import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The feature folders of src/ (docs/architecture.md#feature-modules). */
const features = [
  'audit',
  'auth',
  'credentials',
  'cv',
  'history',
  'locations',
  'media',
  'observations',
  'tenants',
  'visits',
  'webhooks',
];

/**
 * Layering (docs/architecture.md#layering): core/ and http/ are below every feature. They import no
 * feature folder, no read model definition and not the feature list; features register what these layers
 * need of them (upcasters, guards), and app.ts and service.ts wire the rest.
 */
const belowFeatures = (message) => [
  'error',
  {
    patterns: [
      {
        group: [
          ...features.map((feature) => `../${feature}/*`),
          '../../projections/*',
          '../feature.js',
          '../features.js',
          '../app.js',
          '../service.js',
        ],
        message,
      },
    ],
  },
];

export default tseslint.config(
  // Build output anywhere (the service's dist/, the client's client/dist/) is not source.
  { ignores: ['**/node_modules', '**/dist', 'data', '.cache', '**/*.cjs', 'eslint.config.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  {
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': belowFeatures(
        'core/ imports no feature: a feature registers what core needs of it (see src/features.ts).',
      ),
    },
  },
  {
    files: ['src/http/**/*.ts'],
    rules: {
      'no-restricted-imports': belowFeatures(
        'http/ imports no feature, auth/ included: app.ts passes the guards and the caller in (see src/app.ts).',
      ),
    },
  },
  {
    // bin/, scripts/ and examples/ are plain JS that node runs as they are, outside the TypeScript project.
    files: ['bin/*.js', 'scripts/*.js', 'examples/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: { console: 'readonly', process: 'readonly', URL: 'readonly', Buffer: 'readonly' },
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-expressions': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
