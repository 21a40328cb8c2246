// Keeps a test's Claude Code on loopback: loaded into every Node process
// of the agent (`NODE_OPTIONS=--require <this file>`, which the processes
// it starts inherit), it refuses every name lookup but `localhost` and
// every connection outside 127.0.0.0/8 and ::1. Claude Code still looks
// up its vendor's API host at start and at exit, whatever its settings
// say; here that fails at once instead of leaving the machine.
// Each refusal is appended to $LOOPBACK_ONLY_LOG (a JSON line) when set.
"use strict";
const dns = require("node:dns");
const fs = require("node:fs");
const net = require("node:net");

function log(what, target) {
  const file = process.env.LOOPBACK_ONLY_LOG;
  if (!file) return;
  try {
    fs.appendFileSync(file, JSON.stringify({ pid: process.pid, refused: what, target: String(target) }) + "\n");
  } catch {
    // A log that cannot be written refuses nothing more.
  }
}

function loopbackAddress(address) {
  if (net.isIPv4(address)) return address.startsWith("127.");
  if (net.isIPv6(address)) {
    const a = address.toLowerCase();
    return a === "::1" || a.startsWith("::ffff:127.");
  }
  return false;
}

function allowedName(host) {
  return host === "localhost" || net.isIP(host) !== 0;
}

function refusal(syscall, host) {
  const e = new Error(`${syscall} ${host}: refused, the tests stay on loopback (tests/claude-code/preload.js)`);
  e.code = "ENOTFOUND";
  e.syscall = syscall;
  e.hostname = host;
  return e;
}

const lookup = dns.lookup;
dns.lookup = function (host, options, callback) {
  if (typeof options === "function") [options, callback] = [{}, options];
  if (!allowedName(host)) {
    log("lookup", host);
    process.nextTick(callback, refusal("getaddrinfo", host));
    return {};
  }
  return lookup.call(this, host, options, callback);
};

const promisesLookup = dns.promises.lookup;
dns.promises.lookup = function (host, options) {
  if (!allowedName(host)) {
    log("lookup", host);
    return Promise.reject(refusal("getaddrinfo", host));
  }
  return promisesLookup.call(this, host, options);
};

// Queries that go to a DNS server themselves, not through getaddrinfo.
for (const name of Object.keys(dns)) {
  if (/^resolve|^reverse$/.test(name) && typeof dns[name] === "function") {
    dns[name] = function (host, ...rest) {
      log(name, host);
      const callback = rest.findLast((a) => typeof a === "function");
      if (callback) process.nextTick(callback, refusal(name, host));
    };
  }
}
for (const name of Object.keys(dns.promises)) {
  if (/^resolve|^reverse$/.test(name) && typeof dns.promises[name] === "function") {
    dns.promises[name] = function (host) {
      log(name, host);
      return Promise.reject(refusal(name, host));
    };
  }
}

// Where a connect call goes: a path (a Unix socket) or a host, which
// Node looks up with dns.lookup above when it is a name.
function destination(args) {
  let first = args[0];
  if (Array.isArray(first)) first = first[0]; // Node's own normalized form
  if (first !== null && typeof first === "object") {
    if (first.path !== undefined) return { path: first.path };
    return { host: first.host === undefined || first.host === "" ? "localhost" : first.host };
  }
  if (typeof first === "string" && !/^\d+$/.test(first)) return { path: first };
  return { host: typeof args[1] === "string" && args[1] !== "" ? args[1] : "localhost" };
}

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (...args) {
  const to = destination(args);
  if (to.path === undefined && !(to.host === "localhost" || loopbackAddress(to.host))) {
    log("connect", to.host);
    const socket = this;
    process.nextTick(() => socket.destroy(refusal("connect", to.host)));
    return socket;
  }
  return connect.apply(this, args);
};
