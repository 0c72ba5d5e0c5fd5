import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  beginMarker,
  endMarker,
  operationsGuide,
  settingsTable,
  withSettingsTable,
} from '../../scripts/settings-table.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { allSettings, settingNames, settings } from '../../src/settings.js';

const sourceDir = fileURLToPath(new URL('../../src', import.meta.url));

/**
 * The environment variables a source text reads: `env.NAME`, `env['NAME']`, `process.env.NAME`, a setting's
 * declaration (`settings.NAME`, `S.NAME`), and a name passed as text to a read helper (`read(env, 'NAME', …)`,
 * `given('NAME')`, `flag('NAME')`, …).
 */
const environmentReads = (source: string): string[] => {
  const patterns = [
    /\benv\s*(?:\?\.|\.)\s*([A-Z][A-Z0-9_]*)\b/g,
    /\benv\s*(?:\?\.)?\[\s*['"`]([A-Z][A-Z0-9_]*)['"`]\s*\]/g,
    /\b(?:settings|S)\.([A-Z][A-Z0-9_]*)\b/g,
    /\b(?:read\w*|given\w*|optional\w*|flag|count|seconds|positive)\(\s*(?:env\s*,\s*)?['"`]([A-Z][A-Z0-9_]*)['"`]/g,
  ];
  return patterns.flatMap((pattern) => [...source.matchAll(pattern)].map((match) => match[1]!));
};

const sourceFiles = (): string[] =>
  readdirSync(sourceDir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(sourceDir, file));

const strong = () => randomBytes(32).toString('hex');
const productionEnv = (): Record<string, string> => ({
  NODE_ENV: 'production',
  DATA_DIR: '/tmp/unused',
  PLATFORM_ADMIN_KEY: strong(),
  CURSOR_SECRET: strong(),
  SIGNING_KEYS_FILE: '/tmp/unused/keys.json',
  WEBHOOK_SECRET_KEY: strong(),
  IDEMPOTENCY_SECRET_KEY: strong(),
});

const configError = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error(`expected a ConfigError for ${JSON.stringify(env)}`);
};

describe('the settings', () => {
  describe('table in docs/operations.md', () => {
    it('is the one generated from src/settings.ts', async () => {
      const document = readFileSync(operationsGuide, 'utf8');
      const generated = withSettingsTable(document, await settingsTable());
      expect(
        document,
        'the table is stale: run `npm run docs:settings` and commit docs/operations.md',
      ).to.equal(generated);
    });

    it('has one row per setting, naming it, its default and whether production requires it', async () => {
      const rows = (await settingsTable()).split('\n').slice(2);
      expect(rows).to.have.length(allSettings.length);
      for (const [index, setting] of allSettings.entries()) {
        const cells = rows[index]!.split(' | ').map((cell) => cell.replace(/^\|/, '').trim());
        expect(cells[0]).to.equal(`\`${setting.name}\``);
        expect(cells[1]).to.equal(setting.defaultShown ?? `\`${setting.default}\``);
        expect(cells[2]).to.equal(setting.requiredInProduction ? 'required' : '');
        expect(cells[3]).to.include(setting.expected.replaceAll('|', '\\|'));
      }
    });

    it('is found stale when a setting changed, and the markers are required', async () => {
      const table = await settingsTable();
      const document = `# Operations\n\n${beginMarker}\n\n${table.replace('`3000`', '`8080`')}\n\n${endMarker}\n\nafter\n`;
      const regenerated = withSettingsTable(document, table);
      expect(regenerated).not.to.equal(document);
      expect(regenerated).to.equal(`# Operations\n\n${beginMarker}\n\n${table}\n\n${endMarker}\n\nafter\n`);
      expect(() => withSettingsTable('# no markers\n', table)).to.throw(/settings:begin/);
    });
  });

  describe('read by the code', () => {
    it('are found by the scan in every form a read takes', () => {
      const sample = [
        'const a = env.FIRST;',
        "const b = env['SECOND'] ?? env?.THIRD;",
        'const c = process.env.FOURTH;',
        'readSetting(env, settings.FIFTH); readOptionalSetting(env, S.SIXTH);',
        "read(env, 'SEVENTH', '1s', parse, 'x'); given('EIGHTH'); flag(\"NINTH\");",
        'const not = environment.LOWER_case; // process.env is passed whole: process.env)',
      ].join('\n');
      expect(environmentReads(sample)).to.have.members([
        'FIRST',
        'SECOND',
        'THIRD',
        'FOURTH',
        'FIFTH',
        'SIXTH',
        'SEVENTH',
        'EIGHTH',
        'NINTH',
      ]);
    });

    it('are declared under their own names', () => {
      for (const [key, setting] of Object.entries(settings)) expect(setting.name).to.equal(key);
    });

    it('are all declared, and every declared setting is read', () => {
      const read = new Map<string, string>();
      for (const file of sourceFiles()) {
        for (const name of environmentReads(readFileSync(file, 'utf8'))) read.set(name, file);
      }
      const undeclared = [...read].filter(([name]) => !settingNames.has(name));
      expect(
        undeclared.map(([name, file]) => `${name} (${file})`),
        'declare these in src/settings.ts, then run npm run docs:settings',
      ).to.deep.equal([]);
      expect(
        [...settingNames].filter((name) => !read.has(name)),
        'declared but read nowhere',
      ).to.deep.equal([]);
    });
  });

  it('takes AUDIT_DIGEST_SCHEDULE=off as no schedule, and a cron expression as it is', () => {
    expect(loadConfig({ AUDIT_DIGEST_SCHEDULE: 'off' }).auditDigestSchedule).to.equal(null);
    expect(loadConfig({ AUDIT_DIGEST_SCHEDULE: '5 * * * *' }).auditDigestSchedule).to.equal('5 * * * *');
  });

  describe('when a value is not valid', () => {
    for (const [name, value] of [
      ['PORT', 'http'],
      ['PORT', '70000'],
      ['ROLE', 'both'],
      ['LOG_LEVEL', 'verbose'],
      ['WEBHOOK_TIMEOUT', 'soon'],
      ['WEBHOOK_ALLOW_HTTP', 'yes'],
      ['WEBHOOK_RETRY_SCHEDULE', '1m,later'],
      ['WEBHOOK_CONCURRENCY', '0'],
      ['BODY_LIMIT', 'big'],
      ['AUDIT_DIGEST_SCHEDULE', 'every hour'],
      ['METRICS', 'on'],
      ['METRICS_PORT', '0'],
      ['PUBLIC_URL', 'obs.example.com'],
      ['MAIL_FROM', 'nobody'],
      ['UV_THREADPOOL_SIZE', 'lots'],
      ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
    ] as const) {
      it(`refuses ${name}=${value}, naming it and the form expected`, () => {
        expect(configError({ [name]: value })).to.equal(
          `${name}=${value} is not valid: expected ${settings[name].expected}`,
        );
      });
    }

    it('does not echo the password of a URL', () => {
      const message = configError({ MONGODB_URL: 'postgres://app:hunter2secret@db/observations' });
      expect(message).to.equal(
        `MONGODB_URL=postgres://app:[redacted]@db/observations is not valid: expected ${settings.MONGODB_URL.expected}`,
      );
    });

    it('says what is wrong with JSON, without echoing it', () => {
      const message = configError({
        CV_REMOTE_MODELS: '[{"name":"Bad Name","url":"http://u:hunter2secret@127.0.0.1:1"}]',
      });
      expect(message).to.match(/^CV_REMOTE_MODELS is not valid: entry 0: name must be/);
      expect(message).to.include(`expected ${settings.CV_REMOTE_MODELS.expected}`);
      expect(message).not.to.include('hunter2secret');
    });

    it('refuses a metrics listener on the API port', () => {
      expect(configError({ METRICS: 'port', PORT: '9464' })).to.equal(
        "METRICS_PORT=9464 is the API's PORT: METRICS=port needs a port of its own",
      );
      expect(loadConfig({ METRICS: 'platform', PORT: '9464' }).metrics).to.deep.equal({
        mode: 'platform',
        port: 9464,
      });
    });

    it('takes a blank value for unset, as compose files pass unset variables', () => {
      const config = loadConfig({ PORT: '  ', LOG_LEVEL: '', EVENTSTORE_URL: '' });
      expect([config.port, config.logLevel, config.eventStoreUrl]).to.deep.equal([3000, 'info', null]);
    });
  });

  describe('with NODE_ENV=production', () => {
    it('starts with every required setting given', () => {
      expect(loadConfig(productionEnv()).production).to.equal(true);
    });

    for (const setting of allSettings.filter((candidate) => candidate.requiredInProduction)) {
      it(`refuses to start without ${setting.name}, naming it alone`, () => {
        const env = productionEnv();
        delete env[setting.name];
        expect(configError(env)).to.equal(
          `NODE_ENV=production needs every secret set explicitly; missing: ${setting.name}`,
        );
      });
    }

    it('names every weak secret, and never shows one', () => {
      const env = { ...productionEnv(), CURSOR_SECRET: 'a'.repeat(40), WEBHOOK_SECRET_KEY: 'short' };
      const message = configError(env);
      expect(message).to.match(/too weak: CURSOR_SECRET, WEBHOOK_SECRET_KEY$/);
      expect(message).not.to.include('short');
      expect(message).not.to.include('aaaa');
    });
  });
});
