// The agentctx advisor as a co-process: one JSON request per line to its stdin, one answer per
// line from its stdout, answered in order. Any failure (missing binary, crash, garbage, timeout)
// marks it dead: every later request resolves to null and the extension does nothing.
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

export class AdvisorClient {
  constructor(binary, { timeoutMs = 30000, onFailure = () => {} } = {}) {
    this.queue = [];
    this.dead = false;
    this.timeoutMs = timeoutMs;
    this.onFailure = onFailure;
    try {
      this.child = spawn(binary, ["advise", "--stdio"], { stdio: ["pipe", "pipe", "ignore"] });
    } catch (err) {
      this.fail(`cannot start ${binary}: ${err.message}`);
      return;
    }
    // The advisor never keeps Pi alive: it exits on its own when Pi's end of the pipe closes.
    this.child.unref();
    this.child.stdin.unref?.();
    this.child.stdout.unref?.();
    this.child.on("error", (err) => this.fail(`cannot run ${binary}: ${err.message}`));
    this.child.on("exit", (code, signal) => this.fail(`the advisor exited (${signal ?? code})`));
    this.child.stdin.on("error", (err) => this.fail(`the advisor's input closed: ${err.message}`));
    createInterface({ input: this.child.stdout }).on("line", (line) => this.onLine(line));
  }

  fail(reason) {
    if (this.dead) return;
    this.dead = true;
    this.onFailure(reason);
    for (const p of this.queue.splice(0)) {
      clearTimeout(p.timer);
      p.resolve(null);
    }
    try {
      this.child?.kill();
    } catch {}
  }

  onLine(line) {
    if (this.dead) return;
    const p = this.queue.shift();
    if (!p) return this.fail("the advisor answered a request it was not asked");
    clearTimeout(p.timer);
    let answer;
    try {
      answer = JSON.parse(line);
    } catch {
      p.resolve(null);
      return this.fail("the advisor answered with a line that is not JSON");
    }
    if (answer === null || typeof answer !== "object" || Array.isArray(answer)) {
      p.resolve(null);
      return this.fail("the advisor answered with something other than a JSON object");
    }
    p.resolve(answer);
  }

  /** Sends one request; resolves to the answer object, or null once the advisor is dead. */
  ask(request) {
    if (this.dead) return Promise.resolve(null);
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.fail("the advisor did not answer in time"), this.timeoutMs);
      this.queue.push({ resolve, timer });
      try {
        this.child.stdin.write(JSON.stringify(request) + "\n");
      } catch (err) {
        this.fail(`cannot write to the advisor: ${err.message}`);
      }
    });
  }

  close() {
    if (this.dead) return;
    this.ask({ op: "shutdown" }).finally(() => {
      this.dead = true;
      try {
        this.child.stdin.end();
      } catch {}
    });
  }
}
