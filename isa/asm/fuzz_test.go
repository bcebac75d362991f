package asm

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParse feeds arbitrary text to the parser: it must never panic, and a
// program it accepts must print to text that parses again and prints the
// same (the printed form is canonical).
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/rich.s", "testdata/rich.canonical.s"} {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(string(data))
		}
	}
	for _, s := range []string{
		"",
		".version 1\n",
		".version 1\n.target trn2\n.buffer x sbuf bf16 [128, 512]\n.buffer p psum fp32 [128, 512]\ntensor matmul p, x[0:128, 0:128], x start stop\n",
		".version 1\n.buffer x sbuf bf16 [128, 512]\nvector tensor_copy x{p=0:64, off=3, ap=[[-1, 2], [4, 3]]}, x[64:128, 5, ]\n",
		".version 1\n.core 1 3\nsync barrier sem=s7 cores=[0.0, 1.3, 2] target=3 wait=s1@0.0>=1 signal=s2@2+3\n",
		".version 1\n.buffer A hbm fp8e4 [4, 4] addr=4096 chip=1\n.core 1 0\nsync dma_copy A, A{off=1, ap=[[4, 2], [1, 2]]} queue=3 dge=hw\n",
		".version 1\n.buffer x sbuf bf16 [128, 512\n",
		".version 1\nvector tensor_copy x, x\n",
		".version 1\n.buffer x sbuf bf16 [128, 4]\ngpsimd iota x base=-1.5e3 step=+.25\n",
		".version 1\n.buffer x sbuf bf16 [128, 4]\nvector tensor_scalar x, x imm0=0x10 imm1=1e-3 alu0=pow alu1=is_ge\n",
		".version 2\n",
		"tensor matmul\n",
		".version 1\n.buffer x sbuf bf16 [128, 4] offset=99999999999\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Parse(src, "fuzz.s", Options{})
		if err != nil {
			require.Nil(t, p)
			var pe *Error
			require.ErrorAs(t, err, &pe)
			return
		}
		text1, err := String(p)
		require.NoError(t, err)
		p2, err := Parse(text1, "printed.s", Options{})
		require.NoError(t, err, "printed program does not parse:\n%s", text1)
		text2, err := String(p2)
		require.NoError(t, err)
		require.Equal(t, text1, text2, "printing is not canonical")
	})
}
