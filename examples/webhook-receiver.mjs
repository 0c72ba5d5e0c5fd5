import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

// The secret exactly as the API showed it: "whsec_…".
const webhook = new Webhook(process.env.WEBHOOK_SECRET);

createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    let event;
    try {
      // Throws unless a signature matches and the timestamp is recent; returns the parsed body.
      event = webhook.verify(Buffer.concat(chunks).toString('utf8'), req.headers);
    } catch {
      res.writeHead(401).end();
      return;
    }
    // Handle event.type here, deduplicating on event.id (a delivery may come twice).
    console.log(`verified ${event.type} ${event.id}`);
    res.writeHead(204).end();
  });
}).listen(Number(process.env.PORT ?? 4000), '127.0.0.1');
