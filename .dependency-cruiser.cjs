/**
 * The layers of src/ and projections/ (docs/architecture.md#layers), checked by `npm run lint`:
 * core -> storage adapters -> platform (http, openapi, observability) -> features (and projections/) -> wiring.
 * An arrow may only point down, or sideways inside a layer; every exception below says why it is kept.
 */
const features = [
  'audit',
  'auth',
  'credentials',
  'cv',
  'history',
  'locations',
  'mail',
  'media',
  'observations',
  'tenants',
  'visits',
  'webhooks',
];

/** Exception: the media blob stores (and the hash that names a blob) are storage adapters beside their feature. */
const blobStores = '^src/media/(blob-store|file-blobs|gridfs-blobs|postgres-blobs|hash)[.]ts$';

const layer = {
  // Exception: eventstore/port.ts is the event store's port, the interface the command handler appends
  // through; it imports core only, and the adapters beside it implement it.
  core: ['^src/core/', '^src/eventstore/port[.]ts$'],
  storage: ['^src/(eventstore|readmodels|postgres|mongodb)/', blobStores],
  platform: ['^src/(http|openapi|observability|console)/'],
  features: [`^src/(${features.join('|')})/`, '^projections/'],
  // fingerprints/ is wiring, not a feature: it holds the shared settings (src/config.ts) against the stores
  // at start, for the service and the CLI alike.
  wiring: ['^src/[^/]+[.]ts$', '^src/(cli|fingerprints)/'],
};

/** Inside a layer's paths, the files of a layer below it (the port, the blob stores) are not that layer. */
const atOrBelow = (name) => [...lower(name), ...layer[name]];
const lower = (name) => {
  const order = ['core', 'storage', 'platform', 'features', 'wiring'];
  return order.slice(0, order.indexOf(name)).flatMap((below) => layer[below]);
};

const above = (name) => {
  const order = ['core', 'storage', 'platform', 'features', 'wiring'];
  return order.slice(order.indexOf(name) + 1).flatMap((higher) => layer[higher]);
};

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import circle: a module that needs a value from above gets it as an argument.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'core-imports-core',
      comment: 'core/ is the ground floor: events, errors, ids, the command handler, spans.',
      severity: 'error',
      from: { path: layer.core },
      to: { path: above('core'), pathNot: atOrBelow('core') },
    },
    {
      name: 'storage-below-platform',
      comment: 'Storage adapters know core only: no HTTP, no OpenAPI, no metrics, no feature.',
      severity: 'error',
      from: { path: layer.storage, pathNot: lower('storage') },
      to: { path: above('storage'), pathNot: atOrBelow('storage') },
    },
    {
      name: 'platform-below-features',
      comment: 'http/, openapi/ and observability/ know no feature: the wiring passes guards and sources in.',
      severity: 'error',
      // Exception: openapi/document.ts (next rule).
      from: { path: layer.platform, pathNot: '^src/openapi/document[.]ts$' },
      to: { path: above('platform'), pathNot: atOrBelow('platform') },
    },
    {
      name: 'only-the-document-assembles-features',
      comment:
        'openapi/document.ts is the one platform module that reads the feature list (the OpenAPI face of ' +
        'src/features.ts): every feature adds its part through its Feature value, none is named.',
      severity: 'error',
      from: { path: '^src/openapi/document[.]ts$' },
      to: { path: above('platform'), pathNot: ['^src/features[.]ts$', ...atOrBelow('platform')] },
    },
    {
      name: 'features-below-wiring',
      comment:
        'Features know nothing of the wiring. Exception: src/feature.ts, the contract every feature ' +
        'implements (the Feature value and its contexts); it imports types only (next rule).',
      severity: 'error',
      from: { path: layer.features, pathNot: lower('features') },
      to: { path: above('features'), pathNot: ['^src/feature[.]ts$', ...atOrBelow('features')] },
    },
    {
      name: 'feature-contract-types-only',
      comment:
        'src/feature.ts is the contract features import: it may name the types of any layer, nothing more.',
      severity: 'error',
      from: { path: '^src/feature[.]ts$' },
      to: { path: '^(src|projections)/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'adapters-apart',
      comment: "One backend's adapter never borrows from another's: what they share is a neutral module.",
      severity: 'error',
      from: { path: '/(postgres|sqlite|esdb|mongo)[^/]*[.]ts$' },
      to: { path: '/(postgres|sqlite|esdb|mongo)[^/]*[.]ts$', pathNot: '/$1[^/]*[.]ts$' },
    },
    {
      name: 'credentials-below-auth',
      comment: 'auth/ verifies the credentials that credentials/ records; credentials/ never imports auth/.',
      severity: 'error',
      from: { path: '^src/credentials/' },
      to: { path: '^src/auth/' },
    },
    {
      name: 'projections-below-routes',
      comment:
        "A read model folds a feature's events (its deciders and event types); the feature's routes and " +
        'Feature value read and register it. So projections/ imports no route, OpenAPI or feature module.',
      severity: 'error',
      from: { path: '^projections/' },
      to: { path: '^src/[a-z]+/[.a-z-]*(api|feature|openapi|worker)[.]ts$' },
    },
    {
      name: 'domain-below-projections',
      comment:
        "A feature's deciders, events and codecs read no read model: only its routes and wiring do, and its " +
        'domain.ts, which names the read models it owns beside its event schemas (src/domains.ts).',
      severity: 'error',
      from: {
        path: `^src/(${features.join('|')})/`,
        pathNot:
          '^src/[a-z]+/[.a-z-]*(api|feature|domain|openapi|worker|references|digest|verify|replay)[.]ts$',
      },
      to: { path: '^projections/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^(src|projections)/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
