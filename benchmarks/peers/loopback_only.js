// Runs a peer's Node.js language server with every connection to a host other than
// loopback refused before it is looked up: `node loopback_only.js <server script> [args]`.
// The replay points peers at its loopback test server, but some also phone home on their
// own (copilot-language-server fetches experiment flags from GitHub before it has a
// token); nothing of a benchmark run may leave the machine.
"use strict";

const net = require("node:net");
const path = require("node:path");

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);
const connect = net.Socket.prototype.connect;

// Every form of the call: (options), ([options, callback]) as net.connect passes it,
// (port, host), (path).
function destination(args) {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (typeof first === "object" && first !== null) {
    return { host: first.path ? "localhost" : (first.host ?? "localhost"), port: first.port };
  }
  if (typeof first === "string" && Number.isNaN(Number(first))) {
    return { host: "localhost", port: first };
  }
  return { host: typeof args[1] === "string" ? args[1] : "localhost", port: first };
}

net.Socket.prototype.connect = function (...args) {
  const { host, port } = destination(args);
  if (LOOPBACK.has(host)) {
    return connect.apply(this, args);
  }
  process.stderr.write(`loopback_only: refused ${host}:${port}\n`);
  const refused = new Error(`connect ECONNREFUSED ${host} (loopback only)`);
  refused.code = "ECONNREFUSED";
  process.nextTick(() => this.destroy(refused));
  return this;
};

const script = path.resolve(process.argv[2]);
process.argv.splice(1, 1);
require(script);
