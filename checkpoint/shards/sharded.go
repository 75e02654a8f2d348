package shards

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/partbench/partbench/checkpoint"
	"github.com/partbench/partbench/model"
	"github.com/partbench/partbench/partition"
)

// Pre-sharded checkpoints. A rank of TP degree t needs a 1/t slice of most
// tensors; where a row of a row-parallel weight is shorter than a page,
// every page of it holds every rank's columns, so a rank reading its
// slices from the Hugging Face file reads the whole tensor from the disk
// (docs/measurements/speed.md, section 8: at TP 8 no reader of such a file
// passes about 0.3 of its sequential rate). WriteSharded reads the slices
// of one TP index once and writes them, already laid out as the Program's
// tensors ([in, out], Llama's q and k heads permuted, q | k | v and
// gate | up joined), in the checkpoint's own element type, into one
// safetensors file of their own; a rank then reads its stage's tensors as
// one run of that file, front to back, and converts them to float32 with
// no transposition (Sharded). The files lie in the model directory, in
// ShardsDir/KEY/model.safetensors, KEY naming the shard
// (ShardKey): every partitioning with the same TP degree reads the same
// files, whatever its pipeline stages.

// ShardsDir is the folder of a model directory that holds its pre-sharded
// files, one sub-folder per shard.
const ShardsDir = "partbench-shards"

// Metadata keys of a pre-sharded file.
const (
	metaFormat = "partbench.format"
	metaShard  = "partbench.shard"
	metaSource = "partbench.source"
	formatV1   = "partbench pre-sharded checkpoint 1"
)

// ShardKey is the folder name of shard s's file: its TP index and a hash
// of everything the shard describes (heads, columns, vocabulary rows, the
// architecture), so two shards of different weights never share one.
func ShardKey(s model.Shard) string {
	sum := sha256.Sum256([]byte(shardText(s)))
	return fmt.Sprintf("tp-index%d-%s", s.Index, hex.EncodeToString(sum[:6]))
}

// shardText is what a pre-sharded file records of its shard: every field
// but the attention's direction, which reads the same weights.
func shardText(s model.Shard) string {
	s.Arch.Bidirectional = false
	b, err := json.Marshal(s)
	if err != nil { // a Shard is plain data
		panic(err)
	}
	return string(b)
}

// ShardPath is where shard s's file of the model in modelDir lies.
func ShardPath(modelDir string, s model.Shard) string {
	return filepath.Join(modelDir, ShardsDir, ShardKey(s), checkpoint.SingleFile)
}

// SourceIdentity names the checkpoint files w was opened from: each file's
// name, size, modification time and tensor table. A pre-sharded file
// records it, and is refused once the checkpoint's files are not those it
// was written from.
func SourceIdentity(w *checkpoint.Weights) (string, error) {
	h := sha256.New()
	for _, f := range w.Files() {
		st, err := os.Stat(f.Path())
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00", filepath.Base(f.Path()), st.Size(), st.ModTime().UnixNano())
		for _, t := range f.Header().Tensors {
			fmt.Fprintf(h, "%s %s %v %d %d\x00", t.Name, t.DType, t.Shape, t.Begin, t.End)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// shardedName is a tensor's name in a pre-sharded file.
func shardedName(layer int, name string) string {
	if layer < 0 {
		return name
	}
	return fmt.Sprintf("layers.%d.%s", layer, name)
}

// writeBatchBytes bounds the float32 WriteSharded holds at once.
const writeBatchBytes = 256 << 20

// WriteSharded writes the tensors listed of shard s of the checkpoint
// (w, c) into modelDir's pre-sharded file of s (ShardPath), in the order
// listed (a tensor listed twice once), and returns its path and size. It
// reads the slices as Source does, a batch of about writeBatchBytes of
// float32 at a time, and writes each tensor in the element type of the
// checkpoint tensors it came from (float32 where they differ): the values
// are the checkpoint's to the bit. The file is written beside its place
// and renamed into it once complete, so a failed or interrupted write
// leaves no file that looks whole.
func WriteSharded(modelDir string, w *checkpoint.Weights, c *checkpoint.Config, s model.Shard, list []partition.TensorShard) (string, int64, error) {
	src := New(w, c, s)
	ident, err := SourceIdentity(w)
	if err != nil {
		return "", 0, err
	}
	type entry struct {
		key   key
		dtype checkpoint.DType
		k, n  int
		off   int64
	}
	var es []entry
	seen := map[key]bool{}
	var off int64
	hdr := map[string]any{"__metadata__": map[string]string{metaFormat: formatV1, metaShard: shardText(s), metaSource: ident}}
	for _, ts := range list {
		k := key{ts.Layer, ts.Name}
		if seen[k] {
			continue
		}
		seen[k] = true
		r, err := src.recipe(ts.Layer, ts.Name)
		if err != nil {
			return "", 0, err
		}
		dt := checkpoint.F32
		for i, sl := range r.slices {
			if i == 0 {
				dt = sl.Tensor.Info.DType
			} else if sl.Tensor.Info.DType != dt {
				dt = checkpoint.F32
				break
			}
		}
		e := entry{key: k, dtype: dt, k: r.out.K, n: r.out.N, off: off}
		n := int64(e.k) * int64(e.n) * dt.Size()
		hdr[shardedName(ts.Layer, ts.Name)] = map[string]any{"dtype": string(dt), "shape": []int{e.k, e.n}, "data_offsets": []int64{off, off + n}}
		off += n
		es = append(es, e)
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return "", 0, err
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	path := ShardPath(modelDir, s)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".partial-*")
	if err != nil {
		return "", 0, err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o644); err != nil { // as the checkpoint's own files, not CreateTemp's 0600
		return "", 0, err
	}
	bw := bufio.NewWriterSize(tmp, 4<<20)
	var lenb [8]byte
	binary.LittleEndian.PutUint64(lenb[:], uint64(len(js)))
	bw.Write(lenb[:])
	bw.Write(js)
	var buf []byte
	for first := 0; first < len(es); {
		// A batch of tensors read with one Prefetch.
		last, bytes := first, int64(0)
		var batch []partition.TensorShard
		for last < len(es) && (last == first || bytes+int64(es[last].k)*int64(es[last].n)*4 <= writeBatchBytes) {
			bytes += int64(es[last].k) * int64(es[last].n) * 4
			batch = append(batch, partition.TensorShard{Layer: es[last].key.layer, Name: es[last].key.name})
			last++
		}
		if err := src.Prefetch(batch); err != nil {
			return "", 0, err
		}
		for _, e := range es[first:last] {
			t, err := src.Tensor(e.key.layer, e.key.name)
			if err != nil {
				return "", 0, err
			}
			if buf, err = encode(buf[:0], t.Data, e.dtype); err != nil {
				return "", 0, fmt.Errorf("layer %d %s: %w", e.key.layer, e.key.name, err)
			}
			if _, err := bw.Write(buf); err != nil {
				return "", 0, err
			}
		}
		first = last
	}
	if err := bw.Flush(); err != nil {
		return "", 0, err
	}
	if err := tmp.Sync(); err != nil {
		return "", 0, err
	}
	if err := tmp.Close(); err != nil {
		return "", 0, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", 0, err
	}
	done = true
	return path, 8 + int64(len(js)) + off, nil
}

// encode appends vs in dtype, each value exactly (a value read from a
// bf16 or f16 tensor narrows back to its own bits); a value the type does
// not hold exactly is an error.
func encode(dst []byte, vs []float32, dt checkpoint.DType) ([]byte, error) {
	switch dt {
	case checkpoint.F32:
		for _, v := range vs {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	case checkpoint.BF16:
		for _, v := range vs {
			b := math.Float32bits(v)
			if b&0xffff != 0 {
				return nil, fmt.Errorf("%v is not a bfloat16 value", v)
			}
			dst = binary.LittleEndian.AppendUint16(dst, uint16(b>>16))
		}
	case checkpoint.F16:
		for _, v := range vs {
			h, ok := toF16(v)
			if !ok {
				return nil, fmt.Errorf("%v is not a float16 value", v)
			}
			dst = binary.LittleEndian.AppendUint16(dst, h)
		}
	default:
		return nil, fmt.Errorf("no float element type %s", dt)
	}
	return dst, nil
}

// toF16 is v's binary16 bit pattern where v is one exactly (infinities and
// NaNs, payload kept, included).
func toF16(v float32) (uint16, bool) {
	b := math.Float32bits(v)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	frac := b & 0x7fffff
	var h uint16
	switch {
	case exp == 0xff:
		h = sign | 0x7c00 | uint16(frac>>13)
	case exp == 0 && frac == 0:
		h = sign
	case exp-127+15 >= 1: // a normal binary16
		if exp-127+15 > 30 {
			return 0, false
		}
		h = sign | uint16(exp-127+15)<<10 | uint16(frac>>13)
	default: // a subnormal binary16: |v| = m·2^-24
		m := math.Abs(float64(v)) * (1 << 24)
		if m >= 1024 || m != math.Trunc(m) {
			return 0, false
		}
		h = sign | uint16(m)
	}
	return h, math.Float32bits(checkpoint.F16ToFloat32(h)) == b
}

// Sharded is a model.Source of one rank's tensors read from its
// pre-sharded file (WriteSharded): each tensor one contiguous range,
// converted to float32 as it is read, with nothing to transpose or permute;
// the file is read with direct I/O where the system has it
// (checkpoint.Weights.ReadDirect).
// A rank's loader calls Prefetch with its whole list first (its stage's
// tensors, one run of the file); Tensor alone reads one tensor. A Sharded
// is used by one goroutine at a time.
type Sharded struct {
	w       *checkpoint.Weights
	shard   model.Shard
	fetched map[key]*model.Tensor
}

var _ model.Source = (*Sharded)(nil)

// OpenSharded opens shard s's pre-sharded file of the model in modelDir,
// whose checkpoint w was opened; (nil, nil) when there is none. A file
// written for another shard, or from checkpoint files other than w's, is
// an error naming it.
func OpenSharded(modelDir string, w *checkpoint.Weights, s model.Shard) (*Sharded, error) {
	path := ShardPath(modelDir, s)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	sw, err := checkpoint.OpenWeights(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	ident, err := SourceIdentity(w)
	if err != nil {
		sw.Close()
		return nil, err
	}
	meta := sw.Files()[0].Header().Metadata
	switch {
	case meta[metaFormat] != formatV1:
		err = fmt.Errorf("%s: %s is %q, want %q", path, metaFormat, meta[metaFormat], formatV1)
	case meta[metaShard] != shardText(s):
		err = fmt.Errorf("%s: written for shard %s, not this rank's %s", path, meta[metaShard], shardText(s))
	case meta[metaSource] != ident:
		err = fmt.Errorf("%s: written from other checkpoint files than %s's (their names, sizes, times or tensors differ): write it again with partbench shard, or remove %s",
			path, modelDir, filepath.Join(modelDir, ShardsDir))
	}
	if err != nil {
		sw.Close()
		return nil, err
	}
	sw.ReadDirect() // this rank alone reads the file, once
	return &Sharded{w: sw, shard: s}, nil
}

// Close unmaps the file.
func (c *Sharded) Close() error { return c.w.Close() }

// Path is the file read.
func (c *Sharded) Path() string { return c.w.Files()[0].Path() }

// slice is the read of one whole tensor into a new float32 tensor of the
// shard's shape.
func (c *Sharded) slice(layer int, name string) (checkpoint.Slice, *model.Tensor, error) {
	k, n, ok := c.shard.TensorShape(name)
	if !ok {
		return checkpoint.Slice{}, nil, fmt.Errorf("model: no tensor %q", name)
	}
	t, ok := c.w.Tensor(shardedName(layer, name))
	if !ok {
		return checkpoint.Slice{}, nil, fmt.Errorf("%s: no tensor %q (layer %d %s): not written for this partitioning's stages", c.Path(), shardedName(layer, name), layer, name)
	}
	if len(t.Info.Shape) != 2 || t.Info.Shape[0] != int64(k) || t.Info.Shape[1] != int64(n) {
		return checkpoint.Slice{}, nil, fmt.Errorf("%s: %s is %v, the shard's is [%d %d]", c.Path(), t.Info.Name, t.Info.Shape, k, n)
	}
	out := newTensor(k, n)
	return checkpoint.Slice{Tensor: t, Lo: 0, Hi: int64(k), Dst: out.Data}, out, nil
}

// Tensor is the rank's tensor: what Prefetch read (handed out once), else
// read alone.
func (c *Sharded) Tensor(layer int, name string) (*model.Tensor, error) {
	if t := c.fetched[key{layer, name}]; t != nil {
		delete(c.fetched, key{layer, name})
		return t, nil
	}
	sl, out, err := c.slice(layer, name)
	if err != nil {
		return nil, err
	}
	if err := checkpoint.ReadSlices([]checkpoint.Slice{sl}); err != nil {
		return nil, err
	}
	return out, nil
}

// Prefetch reads every tensor listed with one checkpoint.ReadSlices (the
// file's ranges sorted, several large reads in flight); Tensor then hands
// each out once. A tensor listed twice is read once; on an error nothing
// is kept.
func (c *Sharded) Prefetch(tensors []partition.TensorShard) error {
	got := map[key]*model.Tensor{}
	var all []checkpoint.Slice
	for _, ts := range tensors {
		k := key{ts.Layer, ts.Name}
		if got[k] != nil {
			continue
		}
		sl, out, err := c.slice(ts.Layer, ts.Name)
		if err != nil {
			return err
		}
		got[k] = out
		all = append(all, sl)
	}
	if err := checkpoint.ReadSlices(all); err != nil {
		return fmt.Errorf("reading %d tensors of the rank: %w", len(got), err)
	}
	if c.fetched == nil {
		c.fetched = map[key]*model.Tensor{}
	}
	for k, t := range got {
		c.fetched[k] = t
	}
	return nil
}

// StageTensors is the tensors of TP index i's pre-sharded file for plan:
// every stage's (replica 0's ranks of that TP index), stage by stage, so
// each stage's are one run of the file.
func StageTensors(plan *partition.Plan, i int) []partition.TensorShard {
	var out []partition.TensorShard
	seen := map[key]bool{}
	for st := 0; st < plan.PP; st++ {
		for _, ts := range plan.Tensors(plan.RankOf(st, i)) {
			if k := (key{ts.Layer, ts.Name}); !seen[k] {
				seen[k] = true
				out = append(out, ts)
			}
		}
	}
	return out
}
