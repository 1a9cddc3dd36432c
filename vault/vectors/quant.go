package vectors

import (
	"math"
)

// Each vector is stored twice, both small: as int8 components with one
// scale (dims bytes), which rescoring reads back from the database, and as
// sign bits (dims/8 bytes), which Nearest scans in memory. The model's
// float vector itself is not kept: at 768 dimensions it is four times the
// int8 and thirty-two times the bits, and int8 loses under 1% of cosine.

// normalize returns v scaled to unit length (v itself when it is zero).
func normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if sum == 0 {
		copy(out, v)
		return out
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}

// quantize returns unit vector u as int8 components and their scale:
// u[i] ≈ q[i] * scale.
func quantize(u []float32) (q []byte, scale float32) {
	var m float32
	for _, x := range u {
		m = max(m, float32(math.Abs(float64(x))))
	}
	q = make([]byte, len(u))
	if m == 0 {
		return q, 0
	}
	scale = m / 127
	for i, x := range u {
		q[i] = byte(int8(math.Round(float64(x / scale))))
	}
	return q, scale
}

// dequantize is the inverse of quantize, to within rounding.
func dequantize(q []byte, scale float32) []float32 {
	out := make([]float32, len(q))
	for i, b := range q {
		out[i] = float32(int8(b)) * scale
	}
	return out
}

// cosineInt8 is the cosine similarity of unit vector u to int8 vector q:
// q's own length, not the scale, divides, so that rounding never takes a
// score past 1.
func cosineInt8(u []float32, q []byte) float32 {
	var dot, norm float32
	q = q[:len(u)]
	for i, x := range u {
		y := float32(int8(q[i]))
		dot += x * y
		norm += y * y
	}
	if norm == 0 {
		return 0
	}
	return dot / float32(math.Sqrt(float64(norm)))
}

// signBits is v's binary code: bit i set where v[i] > 0, packed into
// words of 64 dimensions.
func signBits(v []float32) []uint64 {
	out := make([]uint64, wordsOf(len(v)))
	for i, x := range v {
		if x > 0 {
			out[i/64] |= 1 << (i % 64)
		}
	}
	return out
}

func wordsOf(dims int) int { return (dims + 63) / 64 }

// Codes are stored as little-endian bytes.

func codeBytes(c []uint64) []byte {
	out := make([]byte, 8*len(c))
	for i, w := range c {
		for j := range 8 {
			out[8*i+j] = byte(w >> (8 * j))
		}
	}
	return out
}

func readCode(dst []uint64, b []byte) {
	for i := range dst {
		var w uint64
		for j := range 8 {
			if k := 8*i + j; k < len(b) {
				w |= uint64(b[k]) << (8 * j)
			}
		}
		dst[i] = w
	}
}
