import { request } from 'node:http';

/**
 * One request over node:http, its answer read to the end. A server that refuses a body over its limit
 * may answer before reading it all and close the connection: fetch then reports the reset and loses the
 * answer. Here the answer counts, and the error writing the rest of the body does not.
 */
export const sendRaw = (
  url: string,
  method: string,
  headers: Record<string, string>,
  body: string | Buffer,
) =>
  new Promise<{ status: number; contentType: string | null; text: string }>((resolve, reject) => {
    let answered = false;
    const outgoing = request(url, { method, headers }, (response) => {
      answered = true;
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          contentType: response.headers['content-type'] ?? null,
          text: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      response.on('error', reject);
    });
    outgoing.on('error', (error) => {
      if (!answered) reject(error);
    });
    outgoing.end(body);
  });
