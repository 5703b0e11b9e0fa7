package ledger

// Routing by the shard map (deploy/README.md): a team's receipts and
// queries go to its shard, each shard its own log with origin
// <base>/shard-<n>. A team pinned under "teams" goes to that shard; any
// other team to shard FNV-1a-64(team) mod (number of shards), as ledgerctl
// (cmd/shard_map.h) and the Python client compute it.
//
// Thread safety: a ShardMap is immutable; ShardedEmitter and
// ShardedDashboard are as safe as the Emitter and Dashboard they hold.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc/credentials"

	"evidence-ledger/clients/go/ledgerpb"
)

// ShardMap says which shard holds a team's evidence.
type ShardMap struct {
	Addresses []string       // by shard number
	Teams     map[string]int // pinned teams
}

// Fnv1a64 is FNV-1a, 64 bits, over the team's bytes.
func Fnv1a64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// ParseShardMap reads the map's JSON; errors name the field and the rule.
func ParseShardMap(doc []byte) (*ShardMap, error) {
	var m struct {
		Version *int `json:"version"`
		Shards  []struct {
			Shard   *int   `json:"shard"`
			Address string `json:"address"`
		} `json:"shards"`
		Teams map[string]int `json:"teams"`
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("shard map: %w", err)
	}
	if m.Version == nil || *m.Version != 1 {
		return nil, errors.New("shard map: version: must be 1")
	}
	addresses := make([]string, len(m.Shards))
	seen := make([]bool, len(m.Shards))
	for _, s := range m.Shards {
		if s.Shard == nil || *s.Shard < 0 || *s.Shard >= len(m.Shards) || seen[*s.Shard] {
			return nil, errors.New("shard map: shards: numbered 0 to n-1, each once")
		}
		if s.Address == "" {
			return nil, fmt.Errorf("shard map: shards[%d].address: required", *s.Shard)
		}
		seen[*s.Shard] = true
		addresses[*s.Shard] = s.Address
	}
	if len(addresses) == 0 {
		return nil, errors.New("shard map: shards: numbered 0 to n-1, each once")
	}
	for team, n := range m.Teams {
		if n < 0 || n >= len(addresses) {
			return nil, fmt.Errorf("shard map: teams.%s: not a shard of this map", team)
		}
	}
	return &ShardMap{Addresses: addresses, Teams: m.Teams}, nil
}

// LoadShardMap reads the map from a file.
func LoadShardMap(path string) (*ShardMap, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("shard map: %w", err)
	}
	return ParseShardMap(doc)
}

// ShardFor returns the number of the team's shard.
func (m *ShardMap) ShardFor(team string) int {
	if n, ok := m.Teams[team]; ok {
		return n
	}
	return int(Fnv1a64(team) % uint64(len(m.Addresses)))
}

// AddressFor returns the address of the team's shard.
func (m *ShardMap) AddressFor(team string) string { return m.Addresses[m.ShardFor(team)] }

// ShardedEmitter holds an Emitter per shard; Emit routes by the receipt's
// team.
type ShardedEmitter struct {
	Map      *ShardMap
	Emitters []*Emitter // by shard number
}

// NewShardedEmitter makes an Emitter per shard of m, each with opts. Without
// TLS it fails, dialing nothing, when any shard's address is not a
// loopback address, unless Insecure.
func NewShardedEmitter(m *ShardMap, opts Options) (*ShardedEmitter, error) {
	if err := checkShardsPlainText(m, opts.TLS, opts.Insecure); err != nil {
		return nil, err
	}
	s := &ShardedEmitter{Map: m}
	for _, address := range m.Addresses {
		e, err := NewEmitter(address, opts)
		if err != nil {
			s.Close(context.Background()) //nolint:errcheck // nothing was emitted
			return nil, err
		}
		s.Emitters = append(s.Emitters, e)
	}
	return s, nil
}

// Emit queues r on its team's shard (as Emitter.Emit).
func (s *ShardedEmitter) Emit(ctx context.Context, r *ledgerpb.Receipt) error {
	if r == nil {
		return errors.New("receipt: required")
	}
	return s.Emitters[s.Map.ShardFor(r.Team)].Emit(ctx, r)
}

// Flush flushes every shard's Emitter, one after the other; the first
// error.
func (s *ShardedEmitter) Flush(ctx context.Context) error {
	var first error
	for _, e := range s.Emitters {
		if err := e.Flush(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Close closes every shard's Emitter; an *UnsettledError with every
// shard's unsettled receipts when some are left.
func (s *ShardedEmitter) Close(ctx context.Context) error {
	left := &UnsettledError{}
	for _, e := range s.Emitters {
		var u *UnsettledError
		if err := e.Close(ctx); errors.As(err, &u) {
			left.Count += u.Count
			left.Receipts = append(left.Receipts, u.Receipts...)
		}
	}
	if left.Count > 0 {
		return left
	}
	return nil
}

// Refused returns every shard's refusals.
func (s *ShardedEmitter) Refused() []Result {
	var out []Result
	for _, e := range s.Emitters {
		out = append(out, e.Refused()...)
	}
	return out
}

// Stats returns the shards' counts added up.
func (s *ShardedEmitter) Stats() Stats {
	var t Stats
	for _, e := range s.Emitters {
		st := e.Stats()
		t.Acknowledged += st.Acknowledged
		t.Duplicates += st.Duplicates
		t.Retries += st.Retries
		t.CallbackErrors += st.CallbackErrors
	}
	return t
}

// ShardedDashboard holds a Dashboard per shard.
type ShardedDashboard struct {
	Map        *ShardMap
	Dashboards []*Dashboard // by shard number
}

// NewShardedDashboard makes a Dashboard per shard of m, each with opts
// (every address checked first, as NewShardedEmitter).
func NewShardedDashboard(m *ShardMap, opts DashboardOptions) (*ShardedDashboard, error) {
	if err := checkShardsPlainText(m, opts.TLS, opts.Insecure); err != nil {
		return nil, err
	}
	s := &ShardedDashboard{Map: m}
	for _, address := range m.Addresses {
		d, err := NewDashboard(address, opts)
		if err != nil {
			s.Close() //nolint:errcheck // the first error is the one to report
			return nil, err
		}
		s.Dashboards = append(s.Dashboards, d)
	}
	return s, nil
}

// checkShardsPlainText is checkPlainText of every shard's address, before
// any shard is dialed.
func checkShardsPlainText(m *ShardMap, tls credentials.TransportCredentials, insecure bool) error {
	for n, address := range m.Addresses {
		if err := checkPlainText(address, tls, insecure); err != nil {
			return fmt.Errorf("shard %d: %w", n, err)
		}
	}
	return nil
}

// ForTeam returns the Dashboard of the team's shard.
func (s *ShardedDashboard) ForTeam(team string) *Dashboard { return s.Dashboards[s.Map.ShardFor(team)] }

// Close closes every shard's Dashboard.
func (s *ShardedDashboard) Close() error {
	var first error
	for _, d := range s.Dashboards {
		if err := d.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
