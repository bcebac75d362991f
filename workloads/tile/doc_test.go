package tile

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docBlock is a fenced code block of a Markdown page.
type docBlock struct {
	info string // the words after the opening fence
	text string
	line int // the line of the opening fence
}

// fencedBlocks returns the ``` blocks of a Markdown text, in order.
func fencedBlocks(t *testing.T, md string) []docBlock {
	t.Helper()
	var out []docBlock
	var cur *docBlock
	var body []string
	for i, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "```") {
			if cur != nil {
				body = append(body, line)
			}
			continue
		}
		if cur == nil {
			cur = &docBlock{info: strings.TrimSpace(strings.TrimPrefix(line, "```")), line: i + 1}
			body = nil
			continue
		}
		require.Equal(t, "```", strings.TrimSpace(line), "line %d: a closing fence has no info string", i+1)
		cur.text = strings.Join(body, "\n") + "\n"
		out = append(out, *cur)
		cur = nil
	}
	require.Nil(t, cur, "an unclosed fence")
	return out
}

// Every tile block of docs/tile.md parses and round-trips (parse, print,
// parse, print gives the same text); every "tile bad" block fails with the
// message of the text block that follows it; and the worked example is
// examples/matmul.tile as shipped.
func TestDocExamples(t *testing.T) {
	md, err := os.ReadFile("../../docs/tile.md")
	require.NoError(t, err)
	example, err := os.ReadFile("../../examples/matmul.tile")
	require.NoError(t, err)
	blocks := fencedBlocks(t, string(md))
	good, bad, sawExample := 0, 0, false
	for i, b := range blocks {
		switch b.info {
		case "tile":
			good++
			k, err := Parse(b.text, "doc.tile")
			require.NoError(t, err, "docs/tile.md:%d:\n%s", b.line, b.text)
			text1 := String(k)
			k2, err := Parse(text1, "printed.tile")
			require.NoError(t, err, "docs/tile.md:%d: the printed text does not parse:\n%s", b.line, text1)
			assert.Equal(t, text1, String(k2), "docs/tile.md:%d: printing is not canonical", b.line)
			if b.text == string(example) {
				sawExample = true
			}
		case "tile bad":
			bad++
			_, err := Parse(b.text, "bad.tile")
			require.Error(t, err, "docs/tile.md:%d: the kernel should fail", b.line)
			require.Less(t, i+1, len(blocks), "docs/tile.md:%d: no message after the bad kernel", b.line)
			next := blocks[i+1]
			require.Equal(t, "text", next.info, "docs/tile.md:%d: the message follows in a text block", next.line)
			want := strings.SplitN(next.text, "\n", 2)[0]
			assert.Equal(t, want, err.Error(), "docs/tile.md:%d", next.line)
		}
	}
	assert.GreaterOrEqual(t, good, 5, "tile blocks found")
	assert.GreaterOrEqual(t, bad, 3, "tile bad blocks found")
	assert.True(t, sawExample, "docs/tile.md's worked example is examples/matmul.tile, verbatim")
}
