package zoo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/trnsim/trnsim/workloads/nn"
)

// Config is a model's architecture, normalised from a Hugging Face
// config.json: the fields that decide the graph, whatever the family
// calls them.
type Config struct {
	// File names the config in errors; Name is the zoo's name (or the
	// file's).
	File, Name string
	// Family is llama, mistral, qwen2, mixtral, gpt2 or bert; Arch is the
	// file's architectures[0].
	Family, Arch                   string
	Hidden, Intermediate, Layers   int64
	Heads, KVHeads, HeadDim        int64
	Vocab, MaxPositions, TypeVocab int64
	NormEps                        float64
	Act                            nn.Activation
	// RoPETheta is the rotary base (0: learned absolute positions, GPT-2
	// and BERT); RoPEScaling the scaling type, which changes the
	// frequencies, not the shapes or the work.
	RoPETheta   float64
	RoPEScaling string
	// TiedEmbeddings: the LM head is the embedding table.
	TiedEmbeddings            bool
	QKVBias, OutBias, MLPBias bool
	// Windows is each layer's sliding attention window (0: full).
	Windows []int64
	// Experts and TopK are a mixture of experts' (Mixtral); 0 for dense.
	Experts, TopK int64
	// Annotation is the zoo's citation (the "_trnsim" key), if any.
	Annotation *Annotation
}

// Annotation is what a zoo file adds to the Hugging Face config under
// "_trnsim": where its values come from and the published parameter count.
type Annotation struct {
	Source string `json:"source"`
	// Params is the published total parameter count, as published
	// (8.03e9); ParamsSource where.
	Params       float64 `json:"params"`
	ParamsSource string  `json:"params_source"`
	// ActiveParams is a mixture of experts' published active count.
	ActiveParams float64 `json:"active_params,omitempty"`
}

// Error is a config.json error: the file, the line of the field when it
// is known, the field, and what is wrong.
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += fmt.Sprintf(":%d", e.Line)
	}
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
	}
	return loc + ": " + e.Msg
}

// families maps the architectures this package builds to their family.
var families = map[string]string{
	"LlamaForCausalLM": "llama", "LlamaModel": "llama",
	"MistralForCausalLM": "mistral", "MistralModel": "mistral",
	"Qwen2ForCausalLM": "qwen2", "Qwen2Model": "qwen2",
	"MixtralForCausalLM": "mixtral", "MixtralModel": "mixtral",
	"GPT2LMHeadModel": "gpt2", "GPT2Model": "gpt2",
	"BertModel": "bert", "BertForMaskedLM": "bert", "BertForPreTraining": "bert", "BertForSequenceClassification": "bert",
}

// benign are keys that do not change the inference graph: training
// settings, token ids, generation defaults, dtype notes, bookkeeping.
var benign = map[string]bool{
	"_name_or_path": true, "_attn_implementation": true, "_trnsim": true, "transformers_version": true,
	"torch_dtype": true, "dtype": true, "use_cache": true, "initializer_range": true, "model_type": true, "architectures": true,
	"bos_token_id": true, "eos_token_id": true, "pad_token_id": true, "sep_token_id": true, "decoder_start_token_id": true,
	"attention_dropout": true, "hidden_dropout": true, "attention_probs_dropout_prob": true, "hidden_dropout_prob": true,
	"attn_pdrop": true, "embd_pdrop": true, "resid_pdrop": true, "summary_first_dropout": true, "classifier_dropout": true,
	"summary_activation": true, "summary_proj_to_labels": true, "summary_type": true, "summary_use_proj": true,
	"task_specific_params": true, "gradient_checkpointing": true, "pretraining_tp": true, "output_router_logits": true,
	"router_aux_loss_coef": true, "router_jitter_noise": true, "id2label": true, "label2id": true, "problem_type": true,
	"chunk_size_feed_forward": true, "scale_attn_weights": true, "scale_attn_by_inverse_layer_idx": true,
	"reorder_and_upcast_attn": true, "n_ctx": true, "tokenizer_class": true, "finetuning_task": true,
	"output_attentions": true, "output_hidden_states": true, "return_dict": true, "torchscript": true,
	"tie_encoder_decoder": true,
}

// ParseHF reads a Hugging Face config.json (as transformers writes it,
// any version; a BOM and Windows line endings are fine). An unknown
// architecture, or a field this package does not build that changes the
// graph, is an error naming it.
func ParseHF(data []byte, file string) (*Config, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal(data, &raw); err != nil {
		line := 0
		msg := "not a JSON object: " + err.Error()
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line = 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			msg = "not valid JSON: " + err.Error()
			if se.Offset >= int64(len(bytes.TrimRight(data, " \t\r\n"))) {
				msg += " (the file ends before its object does)"
			}
		}
		return nil, &Error{File: file, Line: line, Msg: msg}
	}
	lines := keyLines(data)
	p := &hfParser{file: file, raw: raw, lines: lines, used: map[string]bool{}}
	c := &Config{File: file}
	if err := p.parse(c); err != nil {
		return nil, err
	}
	// Every key must be read or known not to matter.
	var unknown []string
	for k := range raw {
		if !p.used[k] && !benign[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		k := unknown[0]
		return nil, &Error{File: file, Line: lines[k], Field: k, Msg: fmt.Sprintf("not supported for %s (%s): it may change the graph, and trnsim does not build it", c.Arch, c.Family)}
	}
	return c, nil
}

// keyLines finds the line of each top-level key.
func keyLines(data []byte) map[string]int {
	out := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // the opening brace
		return out
	}
	for dec.More() {
		off := int(dec.InputOffset())
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return out
		}
		// The offset is just after the previous value: the key is at the
		// next quote.
		if q := bytes.IndexByte(data[off:], '"'); q >= 0 {
			off += q
		}
		out[key] = 1 + bytes.Count(data[:off], []byte("\n"))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return out
		}
	}
	return out
}

type hfParser struct {
	file  string
	raw   map[string]json.RawMessage
	lines map[string]int
	used  map[string]bool
}

func (p *hfParser) errf(key, format string, args ...any) error {
	return &Error{File: p.file, Line: p.lines[key], Field: key, Msg: fmt.Sprintf(format, args...)}
}

func (p *hfParser) has(key string) bool {
	v, ok := p.raw[key]
	return ok && string(v) != "null"
}

// get decodes key into v; ok is false when it is absent or null.
func (p *hfParser) get(key string, v any) (bool, error) {
	p.used[key] = true
	if !p.has(key) {
		return false, nil
	}
	if err := json.Unmarshal(p.raw[key], v); err != nil {
		return false, p.errf(key, "%s is not what the field takes (%v)", string(p.raw[key]), err)
	}
	return true, nil
}

// int reads a positive integer, from the first of keys present.
func (p *hfParser) int(required bool, keys ...string) (int64, error) {
	for _, k := range keys {
		var f float64
		ok, err := p.get(k, &f)
		if err != nil {
			return 0, err
		}
		if !ok {
			continue
		}
		if f <= 0 || f != math.Trunc(f) {
			return 0, p.errf(k, "must be a positive integer, got %s", string(p.raw[k]))
		}
		return int64(f), nil
	}
	if required {
		return 0, &Error{File: p.file, Field: keys[0], Msg: "required"}
	}
	return 0, nil
}

func (p *hfParser) float(def float64, keys ...string) (float64, error) {
	for _, k := range keys {
		var f float64
		ok, err := p.get(k, &f)
		if err != nil {
			return 0, err
		}
		if ok {
			if f < 0 {
				return 0, p.errf(k, "must not be negative, got %v", f)
			}
			return f, nil
		}
	}
	return def, nil
}

func (p *hfParser) bool(def bool, key string) (bool, error) {
	var b bool
	ok, err := p.get(key, &b)
	if err != nil || !ok {
		return def, err
	}
	return b, nil
}

// mustBe rejects a field whose value would change the graph in a way this
// package does not build.
func (p *hfParser) mustBe(key string, allowed any, why string) error {
	p.used[key] = true
	if !p.has(key) {
		return nil
	}
	want, _ := json.Marshal(allowed)
	var got, w any
	_ = json.Unmarshal(p.raw[key], &got)
	_ = json.Unmarshal(want, &w)
	if fmt.Sprint(got) != fmt.Sprint(w) {
		return p.errf(key, "%s is not supported: %s", string(p.raw[key]), why)
	}
	return nil
}

func (p *hfParser) parse(c *Config) error {
	var archs []string
	if _, err := p.get("architectures", &archs); err != nil {
		return err
	}
	var modelType string
	if _, err := p.get("model_type", &modelType); err != nil {
		return err
	}
	switch {
	case len(archs) > 0:
		c.Arch = archs[0]
		c.Family = families[c.Arch]
		if c.Family == "" {
			return p.errf("architectures", "%s is not a supported architecture (supported: %s)", c.Arch, strings.Join(supportedArchs(), ", "))
		}
	case modelType != "":
		for a, f := range families {
			if f == modelType {
				c.Family = f
				c.Arch = a
			}
		}
		if c.Family == "" {
			return p.errf("model_type", "%q is not a supported model type (supported: bert, gpt2, llama, mistral, mixtral, qwen2)", modelType)
		}
	default:
		return &Error{File: p.file, Field: "architectures", Msg: "required (or model_type)"}
	}
	if modelType != "" && modelType != c.Family {
		return p.errf("model_type", "%q does not match architectures' %s (%s)", modelType, c.Arch, c.Family)
	}
	if err := p.mustBe("is_encoder_decoder", false, "encoder-decoder models are not built"); err != nil {
		return err
	}
	var ann Annotation
	if ok, err := p.get("_trnsim", &ann); err != nil {
		return err
	} else if ok {
		c.Annotation = &ann
	}
	switch c.Family {
	case "gpt2":
		return p.parseGPT2(c)
	case "bert":
		return p.parseBERT(c)
	}
	return p.parseLlama(c)
}

func supportedArchs() []string {
	var out []string
	for a := range families {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// act reads hidden_act (or GPT-2's activation_function).
func (p *hfParser) act(key, def string) (nn.Activation, error) {
	s := def
	if _, err := p.get(key, &s); err != nil {
		return "", err
	}
	switch s {
	case "silu", "swish":
		return nn.ActSiLU, nil
	case "gelu":
		return nn.ActGELU, nil
	case "gelu_new", "gelu_pytorch_tanh", "gelu_fast":
		return nn.ActGELUTanh, nil
	case "relu":
		return nn.ActReLU, nil
	}
	return "", p.errf(key, "%q is not a supported activation (silu, gelu, gelu_new, gelu_pytorch_tanh, relu)", s)
}

// parseLlama reads the Llama family's fields (Llama, Mistral, Qwen2,
// Mixtral).
func (p *hfParser) parseLlama(c *Config) error {
	var err error
	if c.Hidden, err = p.int(true, "hidden_size"); err != nil {
		return err
	}
	if c.Intermediate, err = p.int(true, "intermediate_size"); err != nil {
		return err
	}
	if c.Layers, err = p.int(true, "num_hidden_layers"); err != nil {
		return err
	}
	if c.Heads, err = p.int(true, "num_attention_heads"); err != nil {
		return err
	}
	if c.KVHeads, err = p.int(false, "num_key_value_heads"); err != nil {
		return err
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.Vocab, err = p.int(true, "vocab_size"); err != nil {
		return err
	}
	if c.MaxPositions, err = p.int(false, "max_position_embeddings"); err != nil {
		return err
	}
	if c.HeadDim, err = p.int(false, "head_dim"); err != nil {
		return err
	}
	if c.HeadDim == 0 {
		if c.Hidden%c.Heads != 0 {
			return p.errf("num_attention_heads", "%d does not divide hidden_size %d (and there is no head_dim)", c.Heads, c.Hidden)
		}
		c.HeadDim = c.Hidden / c.Heads
	}
	if c.Heads%c.KVHeads != 0 {
		return p.errf("num_key_value_heads", "%d does not divide num_attention_heads %d", c.KVHeads, c.Heads)
	}
	if c.NormEps, err = p.float(1e-6, "rms_norm_eps"); err != nil {
		return err
	}
	if c.Act, err = p.act("hidden_act", "silu"); err != nil {
		return err
	}
	if c.TiedEmbeddings, err = p.bool(false, "tie_word_embeddings"); err != nil {
		return err
	}
	// Biases: Qwen2 puts them on q, k and v always; Llama has switches.
	c.QKVBias = c.Family == "qwen2"
	if b, err := p.bool(false, "attention_bias"); err != nil {
		return err
	} else if b {
		c.QKVBias, c.OutBias = true, true
	}
	if c.MLPBias, err = p.bool(false, "mlp_bias"); err != nil {
		return err
	}
	if err := p.rope(c); err != nil {
		return err
	}
	if err := p.windows(c); err != nil {
		return err
	}
	if c.Family == "mixtral" {
		if c.Experts, err = p.int(true, "num_local_experts"); err != nil {
			return err
		}
		if c.TopK, err = p.int(true, "num_experts_per_tok"); err != nil {
			return err
		}
		if c.TopK > c.Experts {
			return p.errf("num_experts_per_tok", "%d is more than num_local_experts %d", c.TopK, c.Experts)
		}
	}
	return p.mustBe("quantization_config", nil, "quantised checkpoints are given as workload.model.weights_dtype")
}

// rope reads rope_theta and rope_scaling, or transformers v5's
// rope_parameters.
func (p *hfParser) rope(c *Config) error {
	var err error
	if c.RoPETheta, err = p.float(10000, "rope_theta"); err != nil {
		return err
	}
	var params map[string]any
	key := "rope_scaling"
	if ok, err := p.get("rope_parameters", &params); err != nil {
		return err
	} else if ok {
		key = "rope_parameters"
		if th, ok := params["rope_theta"].(float64); ok && th > 0 {
			c.RoPETheta = th
		}
	} else if _, err := p.get("rope_scaling", &params); err != nil {
		return err
	}
	if params == nil {
		return nil
	}
	typ, _ := params["rope_type"].(string)
	if typ == "" {
		typ, _ = params["type"].(string)
	}
	switch typ {
	case "", "default":
	case "linear", "dynamic", "yarn", "llama3", "longrope", "su":
		c.RoPEScaling = typ
	default:
		return p.errf(key, "rope type %q is not supported (default, linear, dynamic, yarn, llama3, longrope)", typ)
	}
	if pf, ok := params["partial_rotary_factor"].(float64); ok && pf != 1 {
		return p.errf(key, "partial_rotary_factor %v is not supported", pf)
	}
	return nil
}

// windows reads the sliding-window fields into each layer's window.
func (p *hfParser) windows(c *Config) error {
	c.Windows = make([]int64, c.Layers)
	window, err := p.int(false, "sliding_window")
	if err != nil {
		return err
	}
	var types []string
	if ok, err := p.get("layer_types", &types); err != nil {
		return err
	} else if ok {
		if int64(len(types)) != c.Layers {
			return p.errf("layer_types", "%d entries for %d layers", len(types), c.Layers)
		}
		for i, t := range types {
			switch t {
			case "full_attention":
			case "sliding_attention":
				c.Windows[i] = window
			default:
				return p.errf("layer_types", "%q is not a supported layer type (full_attention, sliding_attention)", t)
			}
		}
		p.used["use_sliding_window"], p.used["max_window_layers"] = true, true
		return nil
	}
	switch c.Family {
	case "qwen2":
		// Qwen2 slides only with use_sliding_window, from max_window_layers on.
		use, err := p.bool(false, "use_sliding_window")
		if err != nil {
			return err
		}
		from, err := p.int(false, "max_window_layers")
		if err != nil {
			return err
		}
		if use {
			for i := from; i < c.Layers; i++ {
				c.Windows[i] = window
			}
		}
	default:
		for i := range c.Windows {
			c.Windows[i] = window
		}
	}
	return nil
}

func (p *hfParser) parseGPT2(c *Config) error {
	var err error
	if c.Hidden, err = p.int(true, "n_embd"); err != nil {
		return err
	}
	if c.Layers, err = p.int(true, "n_layer"); err != nil {
		return err
	}
	if c.Heads, err = p.int(true, "n_head"); err != nil {
		return err
	}
	if c.Hidden%c.Heads != 0 {
		return p.errf("n_head", "%d does not divide n_embd %d", c.Heads, c.Hidden)
	}
	c.KVHeads, c.HeadDim = c.Heads, c.Hidden/c.Heads
	if c.Intermediate, err = p.int(false, "n_inner"); err != nil {
		return err
	}
	if c.Intermediate == 0 {
		c.Intermediate = 4 * c.Hidden
	}
	if c.Vocab, err = p.int(true, "vocab_size"); err != nil {
		return err
	}
	if c.MaxPositions, err = p.int(true, "n_positions"); err != nil {
		return err
	}
	if c.NormEps, err = p.float(1e-5, "layer_norm_epsilon"); err != nil {
		return err
	}
	if c.Act, err = p.act("activation_function", "gelu_new"); err != nil {
		return err
	}
	c.TiedEmbeddings, c.QKVBias, c.OutBias, c.MLPBias = true, true, true, true
	if c.TiedEmbeddings, err = p.bool(true, "tie_word_embeddings"); err != nil {
		return err
	}
	c.Windows = make([]int64, c.Layers)
	return p.mustBe("add_cross_attention", false, "cross-attention (an encoder-decoder) is not built")
}

func (p *hfParser) parseBERT(c *Config) error {
	var err error
	if c.Hidden, err = p.int(true, "hidden_size"); err != nil {
		return err
	}
	if c.Intermediate, err = p.int(true, "intermediate_size"); err != nil {
		return err
	}
	if c.Layers, err = p.int(true, "num_hidden_layers"); err != nil {
		return err
	}
	if c.Heads, err = p.int(true, "num_attention_heads"); err != nil {
		return err
	}
	if c.Hidden%c.Heads != 0 {
		return p.errf("num_attention_heads", "%d does not divide hidden_size %d", c.Heads, c.Hidden)
	}
	c.KVHeads, c.HeadDim = c.Heads, c.Hidden/c.Heads
	if c.Vocab, err = p.int(true, "vocab_size"); err != nil {
		return err
	}
	if c.MaxPositions, err = p.int(true, "max_position_embeddings"); err != nil {
		return err
	}
	if c.TypeVocab, err = p.int(false, "type_vocab_size"); err != nil {
		return err
	}
	if c.TypeVocab == 0 {
		c.TypeVocab = 2
	}
	if c.NormEps, err = p.float(1e-12, "layer_norm_eps"); err != nil {
		return err
	}
	if c.Act, err = p.act("hidden_act", "gelu"); err != nil {
		return err
	}
	c.QKVBias, c.OutBias, c.MLPBias = true, true, true
	c.Windows = make([]int64, c.Layers)
	if err := p.mustBe("position_embedding_type", "absolute", "only absolute position embeddings are built"); err != nil {
		return err
	}
	if err := p.mustBe("is_decoder", false, "BERT as a decoder is not built"); err != nil {
		return err
	}
	return p.mustBe("add_cross_attention", false, "cross-attention (an encoder-decoder) is not built")
}
