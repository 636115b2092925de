// Forwards every request on 127.0.0.1:<listen> to <target>, adding `Authorization: Bearer
// <token>`: for the MCP conformance suite, which has no option for headers (driftwatch's /mcp
// takes no request without a token). Streams both ways, so SSE passes through as it comes.
// Usage: node auth-proxy.mjs <listen port, 0 for any> <target origin> <token>; prints the port.
import http from "node:http";

const [port, target, token] = process.argv.slice(2);
const upstream = new URL(target);

http
  .createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${token}`, host: upstream.host };
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on("error", (e) => {
      res.writeHead(502);
      res.end(String(e));
    });
    req.pipe(forward);
  })
  .listen(Number(port), "127.0.0.1", function () {
    console.log(this.address().port);
  });
