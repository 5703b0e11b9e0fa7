// The log as C2SP tlog-tiles (c2sp.org/tlog-tiles), read through a view of
// the log (log_view.h) and served under /tlog on the HTTP port:
//
//   /tlog/checkpoint                the latest signed checkpoint note, with the
//                                   witnesses' cosignatures held for it
//   /tlog/tile/<L>/<N>[.p/<W>]      a hash tile: the hashes of tree level 8L
//                                   at indexes 256N .. 256N+W-1 (W = 256
//                                   without ".p/"), 32 bytes each, in order.
//                                   A level-8L hash is the RFC 9162 hash of
//                                   the perfect subtree of 2^(8L) leaves
//                                   (level 0: leaf hashes)
//   /tlog/tile/entries/<N>[.p/<W>]  an entry bundle: the leaves of seqs
//                                   256N .. 256N+W-1, each as
//                                   length u16 (big-endian) | leaf bytes
//
// and beside them, for monitors (ServeMapProof):
//
//   /map/runs/<key>, /map/teams/<key>  the path of a key (64 lowercase hex
//                                   digits) in the run-head or team-head map
//
// Path grammar (only the canonical form; anything else is 400):
//   L     = "0" | [1-9] [0-9]?              at most 63
//   N     = *("x" DIGIT3 "/") DIGIT3        the index in groups of three
//                                           digits, most significant first;
//                                           the first group is not "x000"
//   W     = [1-9] [0-9]? [0-9]?             1 .. 255
//
// Only what the view's checkpoint (the latest signed one) covers is served: a
// tile whose last hash is not a node of that tree (or an entry beyond its
// size) is 404. A
// tile of width W is served whenever the tree holds its first W hashes, so a
// client that verifies an older checkpoint finds the partial tiles of that
// size too. Every tile's bytes are fixed once served (the nodes and leaves
// of a tree never change); a full tile is cached for a year ("immutable"),
// a partial tile for a minute (the full one replaces it), the checkpoint not
// at all.
//
// Access: the log holds every team's entries, so tiles and bundles are for
// identities the policy lets read every team's entries (an auditor of teams
// "*", admin), or for every caller when the operator makes the log public
// (ledgerd --tlog-public). The checkpoint is for every caller with an
// identity, as /checkpoint is. In plain text every caller is "local", admin.
// Refusals are 403 with a body that says why.
//
// Thread-safe: pure functions over a view of the log, itself thread-safe.
#ifndef OPS_TILES_TILES_H_
#define OPS_TILES_TILES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ledger/rpc/auth/policy.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/log/log_view.h"
#include "util/http/http.h"

namespace ledger::ops::tiles {

inline constexpr uint64_t kTileWidth = 256;  // hashes (or entries) in a full tile
inline constexpr int kTileHeight = 8;        // tree levels per tile level

// A hash tile (level, index, width) or, with `entries`, an entry bundle
// (index, width; level 0).
struct Tile {
  bool entries = false;
  int level = 0;
  uint64_t index = 0;
  uint64_t width = kTileWidth;  // 1 .. 256
  bool operator==(const Tile&) const = default;
};

// The tile a path names, given after "tile/" (e.g. "1/x001/234.p/8" or
// "entries/067"). INVALID_ARGUMENT naming the part and its rule when the
// path is not in the canonical form above.
absl::StatusOr<Tile> ParseTilePath(std::string_view path);
// The path of `tile` after "tile/": the inverse of ParseTilePath.
std::string TilePath(const Tile& tile);

// The bytes of hash tile `tile` (not an entry bundle) in the tree of the
// view's size. NOT_FOUND when that tree does not hold its W hashes;
// DATA_LOSS when the store lacks a node it should hold.
absl::StatusOr<std::string> HashTile(const log::LogView& view, const Tile& tile);
// The bytes of entry bundle `tile` in the tree of the view's size. NOT_FOUND
// when the tree does not hold its W entries; DATA_LOSS when the store lacks
// one or one is longer than 65,535 bytes.
absl::StatusOr<std::string> EntryBundle(const log::LogView& view, const Tile& tile);

// Who may read.
struct Access {
  // The policy callers are checked against; nullptr in plain text (every
  // caller is local, admin).
  const auth::Policy* policy = nullptr;
  // Tiles and bundles for every caller (ledgerd --tlog-public).
  bool public_read = false;
};

// The response for a request whose path starts with "/tlog/" (GET or HEAD),
// from `view`, taken at the latest checkpoint, whose note is served as
// `checkpoint` (with the witnesses' cosignatures held for it).
http::HttpResponse Serve(const http::HttpRequest& request, const log::LogView& view, const std::string& checkpoint,
                         const Access& access);

// The response for a request whose path starts with "/map/": the path of a
// key in the run-head map (/map/runs/<key>) or the team-head map
// (/map/teams/<key>) at the latest checkpoint, with that checkpoint's time
// note (CONTRACT section 6a, "Proofs of any key over HTTP"). For those who
// may read the tiles: a path may end in any team's run.
http::HttpResponse ServeMapProof(const http::HttpRequest& request, const log::Log& log, const Access& access);

}  // namespace ledger::ops::tiles

#endif  // OPS_TILES_TILES_H_
