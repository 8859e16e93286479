package export

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hotkeyd/hotkeyd/detect/report"
	"github.com/hotkeyd/hotkeyd/history/view"
)

// KeyMode says how partition keys are shown outside the process: the keys
// setting of the config file and the --keys flag, by the same names.
type KeyMode string

const (
	// KeysPlain shows keys as they are.
	KeysPlain KeyMode = "plain"
	// KeysHash shows the entity prefix and a short keyed hash:
	// "USER#alice@example.com" becomes "USER#3f2a9c1d".
	KeysHash KeyMode = "hash"
	// KeysRedact shows the entity prefix only: "USER#<redacted>".
	KeysRedact KeyMode = "redact"
)

// ParseKeyMode maps "plain", "hash" and "redact" to a KeyMode; the empty
// string means plain.
func ParseKeyMode(s string) (KeyMode, error) {
	if s == "" {
		return KeysPlain, nil
	}
	if m := KeyMode(s); m.Valid() {
		return m, nil
	}
	return "", fmt.Errorf("key mode %q: want plain, hash or redact", s)
}

// Valid reports whether m is one of the three modes (the empty mode is not).
func (m KeyMode) Valid() bool {
	return m == KeysPlain || m == KeysHash || m == KeysRedact
}

// redacted replaces the id part of a key in redact mode.
const redacted = "<redacted>"

// hashHexLen is the number of hex digits of the keyed hash shown in hash
// mode: 32 bits, enough to tell a table's top keys apart (a collision among
// ten keys has odds of about 1 in 10^8) and short enough to read.
const hashHexLen = 8

// maxPrefixLen bounds the entity prefix kept in hash and redact modes.
const maxPrefixLen = 32

// KeyMasker turns partition keys into what metrics, the API, logs and
// reports show. The same masker (same mode and hashing key) must be used
// everywhere so that one key reads the same in all of them, and replicas
// configured with the same hashing key agree. A KeyMasker is safe for
// concurrent use, and changes only by Replace (a reload of the
// configuration); the nil *KeyMasker shows keys as they are.
type KeyMasker struct {
	st atomic.Pointer[maskState]
}

// maskState is a KeyMasker's mode and key, replaced whole.
type maskState struct {
	mode KeyMode
	key  []byte
	macs *sync.Pool // of keyed HMAC-SHA256 hash.Hash, reset before use
}

// plainState is the state of the nil KeyMasker.
var plainState = &maskState{mode: KeysPlain}

func (m *KeyMasker) state() *maskState {
	if m == nil {
		return plainState
	}
	return m.st.Load()
}

// Replace makes m mask as with does from now on: what is masked after it
// returns shows keys in with's mode, and a key reads the same in metrics,
// the API and the logs again from the next evaluation on.
func (m *KeyMasker) Replace(with *KeyMasker) {
	m.st.Store(with.state())
}

// NewKeyMasker returns a masker for mode. hashKey is the secret the hash mode
// is keyed with (HMAC-SHA256); it is required in hash mode, so that a key
// cannot be recovered by hashing guesses without it, and ignored otherwise.
func NewKeyMasker(mode KeyMode, hashKey string) (*KeyMasker, error) {
	var st *maskState
	switch mode {
	case "", KeysPlain:
		st = &maskState{mode: KeysPlain}
	case KeysRedact:
		st = &maskState{mode: KeysRedact}
	case KeysHash:
		if hashKey == "" {
			return nil, fmt.Errorf("key mode hash: a hashing key is required")
		}
		key := []byte(hashKey)
		st = &maskState{mode: KeysHash, key: key, macs: &sync.Pool{
			New: func() any { return hmac.New(sha256.New, key) },
		}}
	default:
		return nil, fmt.Errorf("key mode %q: want plain, hash or redact", mode)
	}
	m := &KeyMasker{}
	m.st.Store(st)
	return m, nil
}

// Mode returns the masker's mode.
func (m *KeyMasker) Mode() KeyMode {
	return m.state().mode
}

// Mask returns the form of key shown outside the process.
//
// The entity prefix is the part up to and including the first "#" when that
// part looks like an entity type (letters, "_", "-", ".", at most 32
// characters; no digits, so no id or date), as in single-table designs
// ("USER#", "ORDER#"). It is kept so
// that a person still sees which kind of item is hot; everything after it is
// replaced. A key without such a prefix is replaced whole. The empty key
// (table-wide traffic) stays empty.
func (m *KeyMasker) Mask(key string) string {
	st := m.state()
	if st.mode == KeysPlain || key == "" {
		return key
	}
	prefix := entityPrefix(key)
	if st.mode == KeysRedact {
		return prefix + redacted
	}
	mac := st.macs.Get().(hash.Hash)
	mac.Reset()
	io.WriteString(mac, key)
	var sum [sha256.Size]byte
	var buf [maxPrefixLen + 1 + hashHexLen]byte
	out := append(buf[:0], prefix...)
	out = hex.AppendEncode(out, mac.Sum(sum[:0])[:hashHexLen/2])
	st.macs.Put(mac)
	return string(out)
}

// entityPrefix returns key's entity prefix including its "#", or "".
func entityPrefix(key string) string {
	i := strings.IndexByte(key, '#')
	if i <= 0 || i > maxPrefixLen {
		return ""
	}
	// Letters only (and _ - .): an entity type, never a number, a date or
	// an id such as "12345#profile".
	for _, c := range []byte(key[:i]) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-' || c == '.'
		if !ok {
			return ""
		}
	}
	return key[:i+1]
}

// MaskReport returns a copy of r with every partition key masked: the top
// keys, the throttled keys, each diagnosis's keys and the keys it explains,
// each finding's key and evidence keys, the quiet's key, and the places
// their fixes, summaries and evidence repeat a key of the table in their
// text. A hot_partition's key is a stream shard id, not a partition key,
// and is kept. In plain mode r itself is returned; reports are never
// modified in place.
func (m *KeyMasker) MaskReport(r report.Report) report.Report {
	if m.Mode() == KeysPlain {
		return r
	}
	out := r
	out.Tables = make([]report.TableReport, len(r.Tables))
	for i, t := range r.Tables {
		out.Tables[i] = m.MaskTable(t)
	}
	return out
}

// MaskSeries returns a copy of s with its keys masked, as MaskReport masks
// the report they come with. In plain mode s itself is returned.
func (m *KeyMasker) MaskSeries(s report.Series) report.Series {
	if m.Mode() == KeysPlain {
		return s
	}
	out := s
	out.Tables = make([]report.TableSeries, len(s.Tables))
	for i, t := range s.Tables {
		t.Keys = slices.Clone(t.Keys)
		for j := range t.Keys {
			t.Keys[j].Key = m.Mask(t.Keys[j].Key)
		}
		out.Tables[i] = t
	}
	return out
}

// MaskHistory returns a copy of hs with the keys of their cells masked,
// as MaskReport masks the report they come with. In plain mode hs itself
// is returned.
func (m *KeyMasker) MaskHistory(hs []view.Answer) []view.Answer {
	if m.Mode() == KeysPlain {
		return hs
	}
	out := make([]view.Answer, len(hs))
	for i, h := range hs {
		h.Series = slices.Clone(h.Series)
		for j := range h.Series {
			cells := slices.Clone(h.Series[j].Cells)
			for c := range cells {
				cells[c].Keys = slices.Clone(cells[c].Keys)
				for k := range cells[c].Keys {
					cells[c].Keys[k].Key = m.Mask(cells[c].Keys[k].Key)
				}
			}
			h.Series[j].Cells = cells
		}
		out[i] = h
	}
	return out
}

// MaskTable is MaskReport for one table's entry.
func (m *KeyMasker) MaskTable(t report.TableReport) report.TableReport {
	if m.Mode() == KeysPlain {
		return t
	}
	// Every key of the table, so that a finding's text that names another
	// key of the table (a hot partition's heaviest key) is masked too.
	var keys []string
	for _, k := range t.TopKeys {
		keys = append(keys, k.Key)
	}
	for _, k := range t.ThrottledKeys {
		keys = append(keys, k.Key)
	}
	for _, f := range t.Findings {
		keys = findingKeys(f, keys)
	}
	for _, d := range t.Diagnoses {
		keys = diagnosisKeys(d, keys)
	}
	if t.Quiet != nil {
		keys = append(keys, t.Quiet.Key)
	}
	pairs := m.replacements(keys)

	mt := t
	if t.TopKeys != nil {
		mt.TopKeys = make([]report.TopKey, len(t.TopKeys))
		for j, k := range t.TopKeys {
			// A masked key has no text form: it would show the key.
			k.Key, k.KeyText = m.Mask(k.Key), ""
			mt.TopKeys[j] = k
		}
	}
	if t.ThrottledKeys != nil {
		mt.ThrottledKeys = make([]report.ThrottledKey, len(t.ThrottledKeys))
		for j, k := range t.ThrottledKeys {
			k.Key, k.KeyText = m.Mask(k.Key), ""
			mt.ThrottledKeys[j] = k
		}
	}
	if t.Findings != nil {
		mt.Findings = make([]report.Finding, len(t.Findings))
		for j, f := range t.Findings {
			mt.Findings[j] = m.maskFinding(f, pairs)
		}
	}
	if t.Diagnoses != nil {
		mt.Diagnoses = make([]report.Diagnosis, len(t.Diagnoses))
		for j, d := range t.Diagnoses {
			mt.Diagnoses[j] = m.maskDiagnosis(d, pairs)
		}
	}
	if t.Forecasts != nil {
		mt.Forecasts = make([]report.Forecast, len(t.Forecasts))
		for j, f := range t.Forecasts {
			f.Key = m.Mask(f.Key)
			mt.Forecasts[j] = f
		}
	}
	if t.Scale != nil {
		mt.Scale = make([]report.ScaleKey, len(t.Scale))
		for j, k := range t.Scale {
			k.Key = m.Mask(k.Key)
			k.Fix = m.maskFix(k.Fix, pairs)
			mt.Scale[j] = k
		}
	}
	mt.Incidents = m.maskIncidents(t.Incidents)
	if t.Quiet != nil {
		q := *t.Quiet
		q.Key = m.Mask(q.Key)
		q.Text = replaceKeys(q.Text, pairs)
		mt.Quiet = &q
	}
	return mt
}

// DiagnosisKey returns the form of a diagnosis's first key shown outside
// the process (the key label of hotkeyd_diagnosis): masked when it is a
// partition key, as it is when it names a stream shard.
func (m *KeyMasker) DiagnosisKey(d report.Diagnosis) string {
	if d.KeyType() != report.PartitionKey {
		return d.Key()
	}
	return m.Mask(d.Key())
}

// MaskDiagnosis returns a copy of d with its keys masked, also where its
// fix, summary and after-state repeat them in their text. Log lines of
// diagnoses go through it.
func (m *KeyMasker) MaskDiagnosis(d report.Diagnosis) report.Diagnosis {
	if m.Mode() == KeysPlain {
		return d
	}
	return m.maskDiagnosis(d, m.replacements(diagnosisKeys(d, nil)))
}

// diagnosisKeys appends the partition keys a diagnosis names: its keys
// (unless they are shards), the keys of the findings it explains, and the
// key its fix's example is built on.
func diagnosisKeys(d report.Diagnosis, keys []string) []string {
	if d.KeyType() == report.PartitionKey {
		keys = append(keys, d.Keys...)
	}
	for _, e := range d.Explains {
		if e.Kind.KeyType() == report.PartitionKey {
			keys = append(keys, e.Key)
		}
	}
	return appendExampleKey(keys, d.Fix.Example)
}

func (m *KeyMasker) maskDiagnosis(d report.Diagnosis, pairs []replacement) report.Diagnosis {
	if d.KeyType() == report.PartitionKey {
		keys := make([]string, len(d.Keys))
		for i, k := range d.Keys {
			keys[i] = m.Mask(k)
		}
		d.Keys = keys
	}
	if d.Explains != nil {
		ex := make([]report.Explained, len(d.Explains))
		for i, e := range d.Explains {
			if e.Kind.KeyType() == report.PartitionKey {
				e.Key = m.Mask(e.Key)
			}
			ex[i] = e
		}
		d.Explains = ex
	}
	d.Fix = m.maskFix(d.Fix, pairs)
	d.Summary = replaceKeys(d.Summary, pairs)
	if d.After != nil {
		a := *d.After
		a.Summary = replaceKeys(a.Summary, pairs)
		d.After = &a
	}
	return d
}

// FindingKey returns the form of a finding's key shown outside the process:
// masked when it is a partition key, as it is when it names something else
// (a stream shard).
func (m *KeyMasker) FindingKey(f report.Finding) string {
	if f.KeyType() != report.PartitionKey {
		return f.Key
	}
	return m.Mask(f.Key)
}

// findingKeys appends the partition keys a finding names: its key (unless
// it is a shard), its evidence keys, and the key a sharding example
// ("K#0 .. K#3") is built on, which a hot_partition finding names only there.
func findingKeys(f report.Finding, keys []string) []string {
	if f.KeyType() == report.PartitionKey {
		keys = append(keys, f.Key)
	}
	if f.Evidence != nil {
		keys = append(keys, f.Evidence.Keys...)
	}
	if r := f.Recommendation; r != nil {
		keys = appendExampleKey(keys, r.Example)
	}
	return keys
}

// appendExampleKey appends the key a sharding example ("K#0 .. K#3") is
// built on, which a hot_partition's fix names only there.
func appendExampleKey(keys []string, example string) []string {
	if first, _, ok := strings.Cut(example, " .. "); ok {
		if k, ok := strings.CutSuffix(first, "#0"); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// replacement is one key and its masked form, as text shows them.
type replacement struct{ from, to string }

// replacements returns the masked forms of keys, plain and quoted (the
// detector quotes keys in sentences), longest first so that a key that
// contains another is replaced whole.
func (m *KeyMasker) replacements(keys []string) []replacement {
	var out []replacement
	seen := map[string]bool{}
	for _, k := range keys {
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		masked := m.Mask(k)
		out = append(out, replacement{k, masked})
		if q := strconv.Quote(k); q != `"`+k+`"` {
			out = append(out, replacement{q, strconv.Quote(masked)})
		}
	}
	slices.SortStableFunc(out, func(a, b replacement) int { return cmp.Compare(len(b.from), len(a.from)) })
	return out
}

func (m *KeyMasker) maskFinding(f report.Finding, pairs []replacement) report.Finding {
	f.Key = m.FindingKey(f)
	if f.Recommendation != nil {
		rec := m.maskFix(*f.Recommendation, pairs)
		f.Recommendation = &rec
	}
	if f.Evidence != nil {
		ev := *f.Evidence
		ev.Summary = replaceKeys(ev.Summary, pairs)
		if ev.Keys != nil {
			ev.Keys = make([]string, len(f.Evidence.Keys))
			for i, k := range f.Evidence.Keys {
				ev.Keys[i] = m.Mask(k)
			}
		}
		f.Evidence = &ev
	}
	return f
}

// maskFix masks the keys a fix names in its example and text.
func (m *KeyMasker) maskFix(rec report.Recommendation, pairs []replacement) report.Recommendation {
	if rec.Kind == report.AdviceRekey && rec.Example != "" {
		// The re-key example rewrites the key around its time part, so
		// the key is not there to be replaced whole.
		const generic = "pk <entity id>, sk <time>"
		rec.Text = strings.ReplaceAll(rec.Text, rec.Example, generic)
		rec.Example = generic
	}
	rec.Example = replaceKeys(rec.Example, pairs)
	rec.Text = replaceKeys(rec.Text, pairs)
	return rec
}

// replaceKeys replaces the keys of pairs in s where they stand as a whole
// word: a key "1" must not turn "10%", "1.5 RCU/s" or the suffix of
// "1#0 .. 1#3" into a hash.
func replaceKeys(s string, pairs []replacement) string {
	if s == "" || len(pairs) == 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		matched := false
		for _, p := range pairs {
			if !strings.HasPrefix(s[i:], p.from) {
				continue
			}
			end := i + len(p.from)
			// A key right after "#" is the tail of a longer key or a
			// shard suffix ("K#0"), not the key itself.
			if i > 0 && (isWordByte(s[i-1]) || s[i-1] == '#') && isWordByte(p.from[0]) ||
				end < len(s) && isWordByte(s[end]) && isWordByte(p.from[len(p.from)-1]) ||
				inNumber(s, i, end) {
				continue
			}
			b.WriteString(p.to)
			i = end
			matched = true
			break
		}
		if !matched {
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// inNumber reports whether s[i:end] is the integer or fraction part of a
// decimal number such as "1.5": a digit, a ".", and the match.
func inNumber(s string, i, end int) bool {
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	return i >= 2 && s[i-1] == '.' && digit(s[i-2]) && digit(s[i]) ||
		end+1 < len(s) && s[end] == '.' && digit(s[end+1]) && digit(s[end-1])
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// maskIncidents masks a table entry's incidents (hotkeyd analyze) as the
// history's are (MaskIncident); nil stays nil.
func (m *KeyMasker) maskIncidents(incs []report.Incident) []report.Incident {
	if incs == nil {
		return nil
	}
	out := make([]report.Incident, len(incs))
	for j, inc := range incs {
		d := m.MaskDiagnosis(report.Diagnosis{Cause: report.Kind(inc.Cause), Class: inc.Class, Keys: inc.Keys, Summary: inc.Summary,
			Fix: report.Recommendation{Kind: report.AdviceKind(inc.FixKind), Text: inc.Fix}})
		inc.Keys, inc.Summary, inc.Fix = d.Keys, d.Summary, d.Fix.Text
		out[j] = inc
	}
	return out
}
