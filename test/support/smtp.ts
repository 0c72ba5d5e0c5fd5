import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One message the server accepted: the envelope and the raw RFC 5322 text. */
export interface ReceivedMail {
  from: string | null;
  to: string[];
  raw: string;
}

/**
 * A real SMTP server on 127.0.0.1 (the `smtp-server` package), plain text and without authentication, so
 * the service's nodemailer transport talks to it as to any relay: SMTP_URL=smtp://127.0.0.1:<port>. Given a
 * port, it listens there (a server that comes up late); otherwise on an ephemeral one.
 */
export const startSmtpServer = async (port = 0) => {
  const messages: ReceivedMail[] = [];
  let waiters: (() => void)[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData: (stream, session, callback) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const { mailFrom, rcptTo } = session.envelope;
        messages.push({
          from: mailFrom ? mailFrom.address : null,
          to: rcptTo.map((address) => address.address),
          raw: Buffer.concat(chunks).toString('utf8'),
        });
        const ready = waiters;
        waiters = [];
        for (const wake of ready) wake();
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.server.address() as AddressInfo).port;

  /** Resolves with the messages once there are at least `count`; rejects after `timeoutMs`. */
  const waitFor = async (count: number, timeoutMs = 10_000): Promise<ReceivedMail[]> => {
    const deadline = Date.now() + timeoutMs;
    while (messages.length < count) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${count} messages, the SMTP server got ${messages.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return messages;
  };

  return {
    url: `smtp://127.0.0.1:${bound}`,
    messages,
    waitFor,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};

/**
 * The text of a message body as a human reads it: undoes quoted-printable soft line breaks and escapes,
 * which nodemailer uses for long lines, so assertions can match sentences.
 */
export const readableText = (raw: string): string =>
  raw
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/g, (_match, hex: string) => String.fromCharCode(parseInt(hex, 16)));
