import { declare, url, urlForm } from './declare.js';

/** Mail: the relay and the sender. */
export const mailSettings = {
  SMTP_URL: declare('SMTP_URL')({
    default: null,
    defaultShown: 'none: e-mails go to `DATA_DIR/outbox/` as `.eml` files',
    expected: urlForm(['smtp', 'smtps'], 'smtps://user:password@mail.example.com'),
    description: 'the SMTP server for notification e-mails (a disabled webhook subscription)',
    parse: url(['smtp', 'smtps']),
  }),
  MAIL_FROM: declare('MAIL_FROM')({
    default: 'Observation service <no-reply@localhost>',
    expected: 'a sender such as `Ops <ops@example.com>`',
    description: 'the `From` of notification e-mails',
    parse: (s) => (s.includes('@') ? s : undefined),
  }),
} as const;
