import { declare, namedSettings, urlSetting } from './declare.js';

/** Mail: the relay and the sender. */
export const mailSettings = namedSettings({
  SMTP_URL: urlSetting(['smtp', 'smtps'], 'smtps://user:password@mail.example.com', {
    defaultShown: 'none: e-mails go to `DATA_DIR/outbox/` as `.eml` files',
    description: 'the SMTP server for notification e-mails (a disabled webhook subscription)',
  }),
  MAIL_FROM: declare({
    default: 'Observation service <no-reply@localhost>',
    expected: 'a sender such as `Ops <ops@example.com>`',
    description: 'the `From` of notification e-mails',
    parse: (s) => (s.includes('@') ? s : undefined),
  }),
});
