// A real ledgerd for the tests: its own temporary data directory, a free
// loopback port it keeps across kill() and start(), and a reader of the
// receipts in its log.
import { ChildProcess, spawn } from "child_process";
import { mkdtempSync, openSync, rmSync } from "fs";
import { createServer } from "net";
import { tmpdir } from "os";
import * as path from "path";
import { createInterface } from "readline";
import type { TestContext } from "node:test";

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

export const ROOT = path.resolve(__dirname, "..", "..", "..", "..");
export const BUILD = path.resolve(process.env.LEDGER_BUILD ?? path.join(ROOT, "build"));

const definition = protoLoader.loadSync("ledger_service.proto", {
  includeDirs: [path.join(ROOT, "proto")], keepCase: true, longs: Number, defaults: true,
});
const LedgerService = (grpc.loadPackageDefinition(definition) as any).evidence.ledger.v1.LedgerService;

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** `client`, closed when the test ends however it ends: an emitter left
 * retrying would keep the test's process alive. */
export function closing<T extends { close(timeoutMs?: number): unknown }>(t: TestContext, client: T): T {
  t.after(() => client.close(0));
  return client;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class Ledger {
  readonly work = mkdtempSync(path.join(tmpdir(), "ledger-ts-client-"));
  address = "";
  private proc?: ChildProcess;

  private constructor(readonly port: number, private readonly args: string[], host: string) {
    this.address = `${host}:${port}`;
  }

  static async start(...args: string[]): Promise<Ledger> {
    return Ledger.startOn("127.0.0.1", ...args);
  }

  /** A ledgerd listening on `host`, an IPv4 address (off loopback, ledgerd wants --insecure or TLS in `args`). */
  static async startOn(host: string, ...args: string[]): Promise<Ledger> {
    const ledger = new Ledger(await freePort(), args, host);
    await ledger.start();
    return ledger;
  }

  async start(): Promise<void> {
    const err = openSync(path.join(this.work, "ledgerd.err"), "a");
    const proc = spawn(path.join(BUILD, "cmd", "ledgerd"), [
      "--data", path.join(this.work, "data"), "--listen", this.address, "--http-listen", "127.0.0.1:0",
      "--checkpoint-interval-ms", "20", "--unknown-grace-ms", "100", "--sweep-interval-ms", "50", ...this.args,
    ], { stdio: ["ignore", "pipe", err] });
    this.proc = proc;
    const first = await new Promise<string>((resolve) => {
      const lines = createInterface({ input: proc.stdout! });
      lines.once("line", (line) => { lines.close(); proc.stdout!.resume(); resolve(line); });
      proc.once("exit", () => resolve(""));
    });
    if (!first.startsWith("listening on")) throw new Error(`ledgerd did not start: see ${this.work}/ledgerd.err`);
  }

  async kill(): Promise<void> {
    await this.signal("SIGKILL");
  }

  /** Stops it and removes its directory (kept when LEDGER_KEEP is set, with ledgerd.err in it). */
  async stop(): Promise<void> {
    await this.signal("SIGTERM");
    if (!process.env.LEDGER_KEEP) rmSync(this.work, { recursive: true, force: true });
  }

  private async signal(signal: NodeJS.Signals): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once("exit", resolve));
    proc.kill(signal);
    await exited;
  }

  /** Every receipt_id in the log, in seq order (duplicates kept), once the checkpoint caught up with the head. */
  async receiptIds(): Promise<string[]> {
    return (await this.receipts()).map((r) => r.receipt_id as string);
  }

  /** The `receipt` member of every leaf in the log, in seq order (duplicates kept), once the checkpoint caught
   * up with the head. */
  async receipts(): Promise<Record<string, unknown>[]> {
    const client = new LedgerService(this.address, grpc.credentials.createInsecure());
    const call = <T>(method: string, request: object): Promise<T> => new Promise((resolve, reject) =>
      client[method](request, { deadline: Date.now() + 10000 },
                     (e: Error | null, r: T) => (e ? reject(e) : resolve(r))));
    try {
      const sizes: number[] = [-1];
      while (sizes.length < 5 || new Set(sizes.slice(-5)).size > 1) {
        sizes.push((await call<{ tree_size: number }>("GetCheckpoint", {})).tree_size);
        await sleep(30);
      }
      const out: Record<string, unknown>[] = [];
      for await (const entry of client.GetEntries({ from_seq: 0, to_seq: sizes[sizes.length - 1] })) {
        out.push(JSON.parse(Buffer.from(entry.leaf).toString("utf8")).receipt);
      }
      return out;
    } finally {
      client.close();
    }
  }
}
