import { expect } from 'chai';
import { loadConfig } from '../../src/config.js';
import { settingNames } from '../../src/settings.js';
import { configurationForLog, editDistance, settingWarnings } from '../../src/settings-startup.js';

describe('start-up warnings about the environment', () => {
  it('counts insertions, deletions, substitutions and swapped neighbours as one edit each', () => {
    expect(editDistance('WEBHOOK_TIMEOUT', 'WEBHOOK_TIMEOUT')).to.equal(0);
    expect(editDistance('WEBHOOK_TIMEOT', 'WEBHOOK_TIMEOUT')).to.equal(1);
    expect(editDistance('WEBHOOK_TIMEOUTT', 'WEBHOOK_TIMEOUT')).to.equal(1);
    expect(editDistance('WEBHOOK_TIMEOTU', 'WEBHOOK_TIMEOUT')).to.equal(1);
    expect(editDistance('WEBHOK_TIMEOT', 'WEBHOOK_TIMEOUT')).to.equal(2);
    expect(editDistance('HOME', 'HOST')).to.equal(2);
    expect(editDistance('', 'PORT')).to.equal(4);
  });

  it('names the setting a misspelt variable was meant to be', () => {
    expect(settingWarnings({ WEBHOOK_TIMEOT: '5s' })).to.deep.equal([
      'WEBHOOK_TIMEOT is not a setting of this service; did you mean WEBHOOK_TIMEOUT? It is ignored',
    ]);
    expect(settingWarnings({ CURSOR_SECERT: 'x' })[0]).to.include('did you mean CURSOR_SECRET?');
    expect(settingWarnings({ LOGLEVEL: 'debug' })[0]).to.include('did you mean LOG_LEVEL?');
    expect(settingWarnings({ port: '8080' })[0]).to.include('did you mean PORT?');
    expect(settingWarnings({ PORTS: '8080' })[0]).to.include('did you mean PORT?');
  });

  it('warns about unknown names with one of our prefixes', () => {
    const env = {
      OBS_COLOUR: 'blue',
      CV_GPU: 'on',
      MEDIA_MAX_FRAMES: '3',
      METRICS_PATH: '/m',
      HTTP_TIMEOUT: '1s',
    };
    const warnings = settingWarnings(env);
    expect(warnings).to.have.length(5);
    for (const [index, name] of Object.keys(env).entries()) {
      expect(warnings[index]).to.equal(
        `${name} is not a setting of this service, though its name looks like one; it is ignored (docs/operations.md#configuration)`,
      );
    }
  });

  it('leaves alone our settings, the OpenTelemetry SDK’s variables and everybody else’s', () => {
    const env: Record<string, string> = Object.fromEntries([...settingNames].map((name) => [name, '']));
    for (const name of [
      'PATH',
      'HOME',
      'HOSTNAME',
      'PWD',
      'USER',
      'SHELL',
      'TERM',
      'LANG',
      'TZ',
      'CI',
      'NODE_OPTIONS',
      'NODE_EXTRA_CA_CERTS',
      'UV_USE_IO_URING',
      'OTEL_EXPORTER_OTLP_HEADERS',
      'OTEL_SERVICE_NAMES',
      'OTEL_TRACES_SAMPLER',
      'HTTP_PROXY',
      'http_proxy',
      'HTTPS_PROXY',
      'NO_PROXY',
      'OBS_KEY',
      'npm_config_cache',
      'npm_lifecycle_event',
    ])
      env[name] = 'x';
    expect(settingWarnings(env)).to.deep.equal([]);
  });
});

describe('the start-up configuration log', () => {
  const secret = 'a-given-secret-0123456789abcdefXYZ';
  const env = {
    DATA_DIR: '/srv/obs',
    PORT: '8080',
    PLATFORM_ADMIN_KEY: secret,
    MONGODB_URL: 'mongodb://app:mongo-password@db:27017/observations?replicaSet=rs0',
    EVENTSTORE_URL: 'esdb://admin:esdb-password@es1:2113,es2:2113?tls=true',
    SMTP_URL: 'smtps://mailer:smtp-password@mail.example.com:465',
    CV_REMOTE_MODELS: '[{"name":"birds","url":"https://infer:model-password@models.example.com"}]',
    WEBHOOK_TIMEOUT: ' 5s ',
  };
  const logged = configurationForLog(env, loadConfig(env));

  it('holds every setting', () => {
    expect(Object.keys(logged)).to.have.members([...settingNames]);
  });

  it('shows what was given, else the default, else null', () => {
    expect(logged).to.deep.include({
      PORT: '8080',
      WEBHOOK_TIMEOUT: '5s',
      HOST: '127.0.0.1',
      RATE_LIMIT: '600/1m',
      CORS_ORIGINS: null,
      PUBLIC_URL: 'http://127.0.0.1:8080',
      SIGNING_KEYS_FILE: '/srv/obs/signing-keys.json (created in development)',
    });
  });

  it('redacts the secrets, saying whether each was given or generated', () => {
    expect(logged).to.deep.include({
      PLATFORM_ADMIN_KEY: '[redacted] (given)',
      CURSOR_SECRET: 'generated in development',
      WEBHOOK_SECRET_KEY: 'generated in development',
      IDEMPOTENCY_SECRET_KEY: 'generated in development',
    });
    expect(JSON.stringify(logged)).not.to.include(secret);
  });

  it('redacts the passwords of URLs, and keeps the rest of them', () => {
    expect(logged).to.deep.include({
      MONGODB_URL: 'mongodb://app:[redacted]@db:27017/observations?replicaSet=rs0',
      EVENTSTORE_URL: 'esdb://admin:[redacted]@es1:2113,es2:2113?tls=true',
      SMTP_URL: 'smtps://mailer:[redacted]@mail.example.com:465',
      CV_REMOTE_MODELS: '[{"name":"birds","url":"https://infer:[redacted]@models.example.com"}]',
    });
    expect(JSON.stringify(logged)).not.to.match(/mongo-password|esdb-password|smtp-password|model-password/);
  });
});
