import { expect } from 'chai';
import { createServer, type Server } from 'node:net';
import { MongoNetworkError } from 'mongodb';
import { UnavailableError } from '../../src/core/errors.js';
import { acquireMongo, orUnavailable } from '../../src/mongodb/client.js';
import { rejectionOf } from '../support/rejections.js';

describe('the shared MongoDB client', () => {
  // A port that accepts and closes every connection: no MongoDB answers there.
  let server: Server;
  let url: string;
  before(async () => {
    server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    url = `mongodb://127.0.0.1:${port}/observations?serverSelectionTimeoutMS=200&connectTimeoutMS=200`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('fails to acquire without a server, and tries again on the next acquire instead of keeping the failure', async () => {
    for (let attempt = 0; attempt < 2; attempt++) {
      const failed = await rejectionOf(acquireMongo(url));
      expect(failed, `attempt ${attempt}`).to.be.instanceOf(Error);
    }
  });

  it('turns a connection failure into a 503 and leaves other errors as they are', async () => {
    const refused = await orUnavailable(Promise.reject(new MongoNetworkError('connection refused'))).catch(
      (error: unknown) => error,
    );
    expect(refused).to.be.instanceOf(UnavailableError);
    const bug = new TypeError('a bug');
    expect(await orUnavailable(Promise.reject(bug)).catch((error: unknown) => error)).to.equal(bug);
  });
});
