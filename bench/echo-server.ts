import Koa from 'koa';
import getRawBody from 'raw-body';

/**
 * The HTTP baseline: a bare Koa app that echoes a JSON body, read the way the service reads bodies
 * (raw-body with the declared length, then JSON.parse). Started as a child process, like the service.
 */
const app = new Koa();
app.silent = true;
app.use(async (ctx) => {
  if (ctx.method === 'GET' && ctx.path === '/health') {
    ctx.body = { status: 'ok' };
    return;
  }
  if (ctx.method === 'POST' && ctx.path === '/echo') {
    const text = await getRawBody(ctx.req, {
      length: ctx.get('Content-Length') || undefined,
      limit: 1024 * 1024,
      encoding: 'utf-8',
    });
    ctx.body = JSON.parse(text) as unknown;
    return;
  }
  ctx.status = 404;
});

const server = app.listen(Number(process.env.PORT), process.env.HOST ?? '127.0.0.1');
// Gone with the benchmark even if it was killed: its end of the stdin pipe closes.
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
process.once('SIGTERM', () => {
  server.close();
  server.closeIdleConnections();
  process.exit(0);
});
