// The Node side of the transport comparison: a loopback HTTP server, and a fetch() client that
// prints the same figures as `bench_provider --url` (requests/s, wall time, CPU per request).
//   node node_fetch_bench.mjs server [--port 8090]
//   node node_fetch_bench.mjs client --url http://127.0.0.1:8090/v1/chat [--requests N] [--concurrency C] [--body-bytes B] [--buffer-body 0|1] [--fresh-body 0|1]
import http from 'node:http';

const args = process.argv.slice(2);
const mode = args[0];
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
// A model-API-sized reply: a short JSON completion.
const reply = JSON.stringify({ id: 'bench', choices: [{ index: 0, message: { role: 'assistant', content: '## Goal\nbenchmark reply' }, finish_reason: 'stop' }], usage: { prompt_tokens: 100, completion_tokens: 20 } });

if (mode === 'server') {
  const port = Number(opt('port', '8090'));
  const server = http.createServer((req, res) => {
    let n = 0;
    req.on('data', (c) => { n += c.length; });
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) });
      res.end(reply);
    });
  });
  server.keepAliveTimeout = 60000;
  server.maxConnections = 100000;
  // Loopback only: this is a benchmark target, never a public service.
  server.listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
} else if (mode === 'client') {
  const url = opt('url');
  const requests = Number(opt('requests', '1000'));
  const concurrency = Number(opt('concurrency', '100'));
  const bodyBytes = Number(opt('body-bytes', '40000'));
  const text = '{"model":"bench","prompt":"' + 'x'.repeat(Math.max(bodyBytes - 30, 0)) + '"}';
  // --buffer-body 1: the bytes encoded once and sent as they are (fetch writes a Uint8Array body
  // without encoding it again), like agentctx's shared body; by default a string, which fetch
  // encodes on every request, like agentctx's --copy-body 1.
  // --fresh-body 1: a new string built for every request, like agentctx's --copy-body 1.
  const fresh = opt('fresh-body', '0') === '1';
  const body = opt('buffer-body', '0') === '1' ? new TextEncoder().encode(text) : text;
  let built = 0;
  const bodyFor = () => (fresh ? '{"model":"bench' + (built++ % 10) + '","prompt":"' + 'x'.repeat(Math.max(bodyBytes - 31, 0)) + '"}' : body);
  let started = 0, finished = 0, failed = 0;
  const one = async () => {
    while (started < requests) {
      ++started;
      try {
        const r = await fetch(url, { method: 'POST', body: bodyFor(), headers: { 'content-type': 'application/json', authorization: 'Bearer bench' } });
        await r.text();
        if (r.status !== 200) ++failed;
      } catch {
        ++failed;
      }
      ++finished;
    }
  };
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Math.min(concurrency, requests) }, one));
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const cpuUs = (cpu.user + cpu.system) / finished;
  console.log(`client=node-fetch requests=${finished} concurrency=${concurrency} body_bytes=${body.length} buffer_body=${typeof body !== 'string' ? 1 : 0} fresh_body=${fresh ? 1 : 0} failed=${failed}`);
  console.log(`requests_per_s=${(finished / wall).toFixed(0)} wall_s=${wall.toFixed(3)} cpu_us_per_request=${cpuUs.toFixed(1)}`);
  process.exit(failed ? 1 : 0);
} else {
  console.error('usage: node node_fetch_bench.mjs server [--port P] | client --url URL [--requests N] [--concurrency C] [--body-bytes B]');
  process.exit(2);
}
