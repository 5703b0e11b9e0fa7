// Routing by the shard map (deploy/README.md): a team's receipts and
// queries go to its shard, each shard its own log with origin
// <base>/shard-<n>.
//
//   const map = ShardMap.load("/etc/ledger/shard-map.json");
//   const emitter = new ShardedEmitter(map, { tls });
//   await emitter.emit(receipt);  // to map.addressFor(receipt.team)
//
// A team pinned under "teams" goes to that shard; any other team to shard
// FNV-1a-64(team) mod (number of shards), as ledgerctl computes it
// (cmd/shard_map.h).
import { readFileSync } from "fs";

import { Dashboard, DashboardOptions } from "./dashboard";
import { Emitter, EmitterOptions, Result } from "./emitter";
import type { Receipt } from "./receipts";
import { ConnectionOptions, plainTextRefusal } from "./stubs";

/** FNV-1a, 64 bits, of the UTF-8 bytes of `text`. */
export function fnv1a64(text: string): bigint {
  let h = 14695981039346656037n;
  for (const byte of Buffer.from(text, "utf8")) {
    h = ((h ^ BigInt(byte)) * 1099511628211n) & 0xffffffffffffffffn;
  }
  return h;
}

export class ShardMap {
  readonly addresses: string[];
  readonly teams: Record<string, number>;

  /** From the map's JSON document; Error naming the field for a map that is not one. */
  constructor(doc: any) {
    if (doc?.version !== 1) throw new Error("shard map: version: must be 1");
    const shards: any[] = [...(doc.shards ?? [])].sort((a, b) => (a?.shard ?? -1) - (b?.shard ?? -1));
    if (shards.length === 0 || shards.some((s, i) => s?.shard !== i)) {
      throw new Error("shard map: shards: numbered 0 to n-1, each once");
    }
    shards.forEach((s, i) => {
      if (typeof s.address !== "string" || !s.address) {
        throw new Error(`shard map: shards[${i}].address: HOST:PORT is required`);
      }
    });
    this.addresses = shards.map((s) => s.address);
    this.teams = { ...(doc.teams ?? {}) };
    for (const [team, n] of Object.entries(this.teams)) {
      if (!Number.isInteger(n) || n < 0 || n >= shards.length) {
        throw new Error(`shard map: teams.${team}: not a shard of this map`);
      }
    }
  }

  static load(path: string): ShardMap {
    return new ShardMap(JSON.parse(readFileSync(path, "utf8")));
  }

  shardFor(team: string): number {
    return Object.hasOwn(this.teams, team) ? this.teams[team]
      : Number(fnv1a64(team) % BigInt(this.addresses.length));
  }

  addressFor(team: string): string {
    return this.addresses[this.shardFor(team)];
  }
}

/** Every shard's address checked as an Emitter or a Dashboard checks its
 * target, before any shard is dialed: Error naming the first refused. */
function checkPlainText(shardMap: ShardMap, options: ConnectionOptions): void {
  shardMap.addresses.forEach((address, n) => {
    const refusal = plainTextRefusal(address, options);
    if (refusal) throw new Error(`shard ${n}: ${refusal}`);
  });
}

/** An Emitter per shard; emit() routes by the receipt's team. */
export class ShardedEmitter {
  readonly emitters: Emitter[];

  /** Error, before any shard is dialed, for plain text to a shard that is not a loopback address without
   * `insecure`. */
  constructor(readonly shardMap: ShardMap, options: EmitterOptions = {}) {
    checkPlainText(shardMap, options);
    this.emitters = shardMap.addresses.map((address) => new Emitter(address, options));
  }

  emit(receipt: Receipt): Promise<void> {
    return this.emitters[this.shardMap.shardFor(receipt.team)].emit(receipt);
  }

  /** Every shard's Emitter.flush(timeoutMs), at once. */
  async flush(timeoutMs?: number): Promise<boolean> {
    return (await Promise.all(this.emitters.map((e) => e.flush(timeoutMs)))).every(Boolean);
  }

  /** Every shard's Emitter.close(timeoutMs), at once; their unsettled receipts are in `unsettled`. */
  async close(timeoutMs?: number): Promise<boolean> {
    return (await Promise.all(this.emitters.map((e) => e.close(timeoutMs)))).every(Boolean);
  }

  get unsettled(): Receipt[] {
    return this.emitters.flatMap((e) => e.unsettled);
  }

  get refused(): Result[] {
    return this.emitters.flatMap((e) => e.refused);
  }

  get acknowledged(): number {
    return this.emitters.reduce((n, e) => n + e.acknowledged, 0);
  }

  get callbackErrors(): number {
    return this.emitters.reduce((n, e) => n + e.callbackErrors, 0);
  }
}

/** Dashboard calls routed to the team's shard. */
export class ShardedDashboard {
  readonly dashboards: Dashboard[];

  /** Every shard's address checked first, as ShardedEmitter's. */
  constructor(readonly shardMap: ShardMap, options: DashboardOptions = {}) {
    checkPlainText(shardMap, options);
    this.dashboards = shardMap.addresses.map((address) => new Dashboard(address, options));
  }

  forTeam(team: string): Dashboard {
    return this.dashboards[this.shardMap.shardFor(team)];
  }

  close(): void {
    for (const d of this.dashboards) d.close();
  }
}
