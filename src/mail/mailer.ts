import { mkdirSync, writeFileSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import type { Logger } from 'pino';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  readonly kind: 'smtp' | 'outbox';
  send(mail: Mail): Promise<{ messageId: string }>;
  /** Messages written to the outbox and still there (the outbox mailer only): a metric. */
  outboxDepth?(): Promise<number>;
  close(): void;
}

/** Mail over SMTP with nodemailer (SMTP_URL, e.g. `smtp://user:pass@host:587`). */
export const smtpMailer = (url: string, from: string): Mailer => {
  const transport = nodemailer.createTransport(url);
  return {
    kind: 'smtp',
    send: async (mail) => {
      const info = await transport.sendMail({ from, ...mail });
      return { messageId: info.messageId };
    },
    close: () => transport.close(),
  };
};

/**
 * Without SMTP_URL, each message is written as a standard .eml file under DATA_DIR/outbox and logged: the
 * embedded default needs no mail server, and the files open in any mail client.
 */
export const outboxMailer = (dataDir: string, from: string, logger: Logger): Mailer => {
  const outbox = join(dataDir, 'outbox');
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    kind: 'outbox',
    send: async (mail) => {
      const info = await transport.sendMail({ from, ...mail });
      mkdirSync(outbox, { recursive: true, mode: 0o700 });
      const file = join(
        outbox,
        `${new Date().toISOString().replace(/[:.]/g, '-')}-${info.messageId.replace(/[^A-Za-z0-9]/g, '')}.eml`,
      );
      // Mails name tenants and their receivers: readable by the service's user alone, like the databases.
      writeFileSync(file, info.message as Buffer, { mode: 0o600 });
      logger.info({ to: mail.to, subject: mail.subject, file }, 'mail written to the outbox');
      return { messageId: info.messageId };
    },
    outboxDepth: async () => {
      const files = await readdir(outbox).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return [];
        throw error;
      });
      return files.filter((name) => name.endsWith('.eml')).length;
    },
    close: () => transport.close(),
  };
};
