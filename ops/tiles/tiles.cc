#include "ops/tiles/tiles.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/retention/pruned.h"
#include "ledger/format/runmap/proof_json.h"
#include "nlohmann/json.hpp"
#include "util/jsonlog/jsonlog.h"

namespace ledger::ops::tiles {
namespace {

constexpr uint64_t kMaxIndex = UINT64_MAX / kTileWidth;  // 256N + W fits a u64
constexpr uint64_t kMaxEntryBytes = 0xFFFF;
constexpr uint64_t kHashBytes = std::tuple_size_v<hash::Hash>;

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A decimal without leading zeros, of at most `digits` digits, at most `max`.
absl::StatusOr<uint64_t> Decimal(std::string_view s, size_t digits, uint64_t max, std::string_view what) {
  if (!AllDigits(s) || s.size() > digits || (s.size() > 1 && s[0] == '0')) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": a decimal number without leading zeros, got '", std::string(s), "'"));
  }
  uint64_t v = 0;
  for (char c : s) v = v * 10 + static_cast<uint64_t>(c - '0');
  if (v > max) return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": at most ", max, ", got ", v));
  return v;
}

// N from its groups ("x001", "x234", "067").
absl::StatusOr<uint64_t> Index(const std::vector<std::string_view>& groups) {
  constexpr char kRule[] = "tile index: groups of three digits, all but the last prefixed 'x', without a leading x000";
  uint64_t n = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    std::string_view g = groups[i];
    bool last = i + 1 == groups.size();
    if (!last) {
      if (g.size() != 4 || g[0] != 'x') return absl::InvalidArgumentError(kRule);
      g.remove_prefix(1);
    }
    if (g.size() != 3 || !AllDigits(g) || (i == 0 && !last && g == "000")) return absl::InvalidArgumentError(kRule);
    uint64_t d = 0;
    for (char c : g) d = d * 10 + static_cast<uint64_t>(c - '0');
    if (n > (kMaxIndex - d) / 1000) return absl::InvalidArgumentError(absl::StrCat("tile index: at most ", kMaxIndex));
    n = n * 1000 + d;
  }
  return n;
}

// The number of nodes of tree level `level` in a tree of `size` leaves.
uint64_t NodesAt(uint64_t size, int level) { return level >= 64 ? 0 : size >> level; }

// NOT_FOUND unless the first `count` items of a level are the tile's.
absl::Status Within(const Tile& tile, uint64_t count, uint64_t tree_size) {
  if (tile.index > count / kTileWidth || tile.index * kTileWidth + tile.width > count) {
    return absl::NotFoundError(
        absl::StrCat("tile/", TilePath(tile), ": beyond the latest checkpoint (tree size ", tree_size, ")"));
  }
  return absl::OkStatus();
}

http::HttpResponse Refused(std::string why) {
  http::HttpResponse r = http::Text(403, why + "\n");
  r.refusal = std::move(why);
  return r;
}

http::HttpResponse Failed(const http::HttpRequest& request, const absl::Status& s) {
  if (s.code() == absl::StatusCode::kInvalidArgument) return http::Text(400, absl::StrCat(s.message(), "\n"));
  if (s.code() == absl::StatusCode::kNotFound) return http::Text(404, absl::StrCat(s.message(), "\n"));
  // A bundle whose every entry was pruned (EntryBundle): gone for good.
  if (s.code() == absl::StatusCode::kFailedPrecondition) return http::Text(410, absl::StrCat(s.message(), "\n"));
  jsonlog::Error("tile_failed")
      .Str("path", request.path)
      .Str("request_id", request.request_id)
      .Str("status", s.ToString())
      .Emit();
  return http::Text(500, "the store cannot serve this tile; the ledger's log says why\n");
}

// Who may read tiles and bundles: OK, or why not.
absl::Status MayReadLog(const http::HttpRequest& request, const Access& access) {
  if (access.public_read || access.policy == nullptr) return absl::OkStatus();
  if (access.policy->CoversAllTeams(request.identity, auth::Action::kReadEntries)) return absl::OkStatus();
  return absl::PermissionDeniedError(
      absl::StrCat("identity '", request.identity,
                   "' may not read the log's tiles: they hold every team's entries (an auditor of every team or "
                   "an admin may; or the operator makes the log public with --tlog-public)"));
}

}  // namespace

absl::StatusOr<Tile> ParseTilePath(std::string_view path) {
  std::vector<std::string_view> parts;
  for (size_t from = 0;;) {
    size_t slash = path.find('/', from);
    parts.push_back(path.substr(from, slash == std::string_view::npos ? std::string_view::npos : slash - from));
    if (slash == std::string_view::npos) break;
    from = slash + 1;
  }
  Tile tile;
  if (parts.size() < 2) return absl::InvalidArgumentError("tile path: <L>/<N>[.p/<W>] or entries/<N>[.p/<W>]");
  if (parts[0] == "entries") {
    tile.entries = true;
  } else {
    auto level = Decimal(parts[0], 2, 63, "tile level");
    if (!level.ok()) return level.status();
    tile.level = static_cast<int>(*level);
  }
  parts.erase(parts.begin());
  // "<last group>.p" and "<W>" for a partial tile.
  if (parts.size() >= 2 && parts[parts.size() - 2].size() > 2 && parts[parts.size() - 2].ends_with(".p")) {
    auto width = Decimal(parts.back(), 3, kTileWidth - 1, "tile width");
    if (!width.ok()) return width.status();
    if (*width == 0) return absl::InvalidArgumentError("tile width: from 1 to 255");
    tile.width = *width;
    parts.pop_back();
    parts.back().remove_suffix(2);
  }
  auto index = Index(parts);
  if (!index.ok()) return index.status();
  tile.index = *index;
  return tile;
}

std::string TilePath(const Tile& tile) {
  std::string digits = std::to_string(tile.index);
  digits.insert(0, (3 - digits.size() % 3) % 3, '0');
  std::string out = tile.entries ? "entries" : std::to_string(tile.level);
  for (size_t i = 0; i < digits.size(); i += 3) {
    absl::StrAppend(&out, "/", i + 3 < digits.size() ? "x" : "", digits.substr(i, 3));
  }
  if (tile.width != kTileWidth) absl::StrAppend(&out, ".p/", tile.width);
  return out;
}

absl::StatusOr<std::string> HashTile(const log::LogView& view, const Tile& tile) {
  const uint64_t tree_size = view.size();
  const int level = kTileHeight * tile.level;
  if (absl::Status s = Within(tile, NodesAt(tree_size, level), tree_size); !s.ok()) return s;
  std::string out;
  out.reserve(tile.width * kHashBytes);
  const uint64_t first = tile.index * kTileWidth, end = first + tile.width;
  constexpr uint64_t kGroup = log::LogView::kNodesPerGroup;
  for (uint64_t group = first / kGroup; group * kGroup < end; ++group) {
    auto nodes = view.GetNodeGroup(level, group);
    if (absl::IsNotFound(nodes.status())) break;  // DATA_LOSS below: the tree holds these nodes
    if (!nodes.ok()) return nodes.status();
    for (uint64_t i = 0; i < nodes->size(); ++i) {
      uint64_t at = group * kGroup + i;
      if (at >= end) break;
      out.append(reinterpret_cast<const char*>((*nodes)[i].data()), (*nodes)[i].size());
    }
  }
  if (out.size() != tile.width * kHashBytes) {
    return absl::DataLossError(absl::StrCat("tile/", TilePath(tile), ": the store holds ", out.size() / kHashBytes,
                                            " of its ", tile.width, " nodes of level ", level));
  }
  return out;
}

absl::StatusOr<std::string> EntryBundle(const log::LogView& view, const Tile& tile) {
  if (absl::Status s = Within(tile, view.size(), view.size()); !s.ok()) return s;
  std::string out;
  const uint64_t first = tile.index * kTileWidth;
  uint64_t kept = 0;  // entries not pruned (CONTRACT section 9)
  absl::Status s = view.ScanLeaves(first, first + tile.width, [&](uint64_t seq, std::string_view leaf) {
    if (!retention::LooksPruned(leaf)) ++kept;
    if (leaf.size() > kMaxEntryBytes) {
      return absl::DataLossError(absl::StrCat("entry ", seq, ": ", leaf.size(), " bytes, more than a bundle holds"));
    }
    out.push_back(static_cast<char>(leaf.size() >> 8));
    out.push_back(static_cast<char>(leaf.size() & 0xFF));
    out.append(leaf);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  if (kept == 0) {
    return absl::FailedPreconditionError(absl::StrCat("tile/", TilePath(tile), ": every entry of the bundle (seqs ",
                                                      first, " to ", first + tile.width - 1,
                                                      ") was pruned under the retention policy (CONTRACT section 9)"));
  }
  return out;
}

http::HttpResponse Serve(const http::HttpRequest& request, const log::LogView& view, const std::string& checkpoint,
                         const Access& access) {
  if (access.policy != nullptr && request.identity.empty()) return Refused("client certificate: names no identity");
  const std::string_view path = request.path;
  if (path == "/tlog/checkpoint") {
    http::HttpResponse r = http::Text(200, checkpoint);
    r.headers["Cache-Control"] = "no-cache";
    return r;
  }
  constexpr std::string_view kTiles = "/tlog/tile/";
  if (!path.starts_with(kTiles)) return http::Text(404, "not found: /tlog/checkpoint, /tlog/tile/...\n");
  if (absl::Status s = MayReadLog(request, access); !s.ok()) return Refused(std::string(s.message()));
  auto tile = ParseTilePath(path.substr(kTiles.size()));
  if (!tile.ok()) return Failed(request, tile.status());
  auto bytes = tile->entries ? EntryBundle(view, *tile) : HashTile(view, *tile);
  if (!bytes.ok()) return Failed(request, bytes.status());
  http::HttpResponse r = http::Text(200, *std::move(bytes));
  r.content_type = "application/octet-stream";
  // Shared caches keep a tile only when anyone may read it. A full hash
  // tile never changes; a full entry bundle changes when one of its entries
  // is erased (CONTRACT section 8), so caches keep it an hour at most.
  const char* age = tile->width != kTileWidth ? ", max-age=60"
                    : tile->entries           ? ", max-age=3600"
                                              : ", max-age=31536000, immutable";
  r.headers["Cache-Control"] = absl::StrCat(access.public_read || access.policy == nullptr ? "public" : "private", age);
  return r;
}

http::HttpResponse ServeMapProof(const http::HttpRequest& request, const log::Log& log, const Access& access) {
  if (access.policy != nullptr && request.identity.empty()) return Refused("client certificate: names no identity");
  const std::string_view path = request.path;
  const bool teams = path.starts_with("/map/teams/");
  if (!teams && !path.starts_with("/map/runs/"))
    return http::Text(404, "not found: /map/runs/<key>, /map/teams/<key>\n");
  if (absl::Status s = MayReadLog(request, access); !s.ok()) return Refused(std::string(s.message()));
  const std::string_view hex = path.substr(teams ? 11 : 10);
  runmap::Key key{};
  const bool lower =
      std::all_of(hex.begin(), hex.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  if (hex.size() != 64 || !lower || !hash::ParseHexTo(hex, &key)) {
    return http::Text(400, "key: 64 lowercase hex digits, a run key v2 or a team key\n");
  }
  auto proof = log.ProveMapKey(teams, key);
  if (absl::IsUnavailable(proof.status())) return http::Text(503, absl::StrCat(proof.status().message(), "\n"));
  if (absl::IsFailedPrecondition(proof.status())) return http::Text(404, absl::StrCat(proof.status().message(), "\n"));
  if (!proof.ok()) return Failed(request, proof.status());
  nlohmann::json body = {{"tree_size", proof->checkpoint.size}, {"time_note", proof->checkpoint.time_note}};
  std::string out = body.dump();
  out.pop_back();  // the proof, as EncodeProof writes it, after the other members
  absl::StrAppend(&out, ",\"proof\":", runmap::EncodeProof({key, proof->path}), "}");
  http::HttpResponse r = http::Text(200, out);
  r.content_type = "application/json";
  r.headers["Cache-Control"] = "no-cache";
  return r;
}

}  // namespace ledger::ops::tiles
