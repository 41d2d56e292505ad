"""syncsim's emulated models (kernels/model.c, kernels/model_spec.c) as torch.nn.Modules, for the
scripts under bench/ that time or check them against PyTorch.

    build(name, in_c=1, in_hw=28, classes=10) -> nn.Module

Names are syncsim's `--model` forms:
  logreg          dense(in, K)
  mlp             dense 784->256, ReLU, dense 256->256, ReLU, dense 256->10
  cnn             conv 5x5 32 pad 2, ReLU, max-pool 2; conv 5x5 64 pad 2, ReLU, max-pool 2;
                  dense 128, ReLU, dense K
  cnn:C1,C2,D...  the same with other channels and dense widths
  cnn:lenet       LeNet-5 as NIID-Bench uses it: convs of 6 and 16 unpadded, dense 120, 84
  resnet:D[,proj] the CIFAR ResNet of He et al. 2016 (section 4.2): 3x3 conv 16 + BN + ReLU,
                  3 stages of (D-2)/6 basic blocks of 16, 32, 64 channels, shortcuts of option A
                  (subsampled, channels zero-padded on both sides) or B with proj (1x1 conv +
                  BN), global average pooling, dense K; convolutions without bias
  vgg:D           VGG-11/13/16/19 with batch norm after every 3x3 conv (no bias), widths 64, 128,
                  256, 512, 512, a 2x2 max pool closing each stage while the map is at least 2x2,
                  global average pooling, dense K
  gpt:L,D,H,T[,P] a decoder-only Transformer in GPT-2's layout (kernels/gpt.h): token embedding
                  wte + learned positions wpe, dropout P (0.1); L pre-norm blocks
                  x += drop(attn(ln1(x))), x += drop(proj(GELU(fc(ln2(x))))) with causal attention
                  of H heads (dropout on the probabilities) and an MLP D -> 4D -> D, GELU in its
                  erf form (nn.GELU's default); a final layer norm; logits x wte^T (tied)
  gpt:wlm         (also gpt, gpt:selsync) PyTorch's examples/word_language_model Transformer as
                  syncsim defines it: embedding x sqrt(200) + sinusoidal positions, dropout 0.2;
                  2 nn.TransformerEncoderLayer(200, 2, 200, 0.2) (post-norm, ReLU); no final
                  norm; an untied decoder with bias; T = 35
For the gpt forms `classes` is the vocabulary. Their attention is nn.MultiheadAttention's
arithmetic written out (Attention, with its parameter names), so that a dropout mask can be given
to every dropout site: model.dropout_sites() names them as bench/step_dump does ("emb",
"h0.attn.probs", "h0.attn.out", "h0.mlp.hidden" (wlm), "h0.mlp.out", ...), and a site's `mask`
(0 or 1 / (1 - p), the activation's shape), when set, replaces its random draw.
Batch norm is PyTorch's (momentum 0.1, eps 1e-5), as syncsim's.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

VGG_STAGES = {11: (1, 1, 2, 2, 2), 13: (2, 2, 2, 2, 2), 16: (2, 2, 3, 3, 3), 19: (2, 2, 4, 4, 4)}


class ShortcutA(nn.Module):
    """Option A: the input subsampled by the stride, its new channels zeros split around it."""

    def __init__(self, stride, in_c, out_c):
        super().__init__()
        self.stride, self.lo = stride, (out_c - in_c) // 2
        self.hi = out_c - in_c - self.lo

    def forward(self, x):
        if self.stride > 1:
            x = x[:, :, ::self.stride, ::self.stride]
        if self.lo or self.hi:
            x = F.pad(x, (0, 0, 0, 0, self.lo, self.hi))
        return x


class BasicBlock(nn.Module):
    def __init__(self, in_c, planes, stride, proj):
        super().__init__()
        self.conv1 = nn.Conv2d(in_c, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        if stride == 1 and in_c == planes:
            self.sc = nn.Identity()
        elif proj:
            self.sc = nn.Sequential(nn.Conv2d(in_c, planes, 1, stride, 0, bias=False),
                                    nn.BatchNorm2d(planes))
        else:
            self.sc = ShortcutA(stride, in_c, planes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.sc(x))


class ResNet(nn.Module):
    def __init__(self, depth, in_c, classes, proj):
        super().__init__()
        if (depth - 2) % 6:
            raise ValueError(f"resnet depth {depth} is not 6n + 2")
        n = (depth - 2) // 6
        self.stem = nn.Sequential(nn.Conv2d(in_c, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU())
        blocks, c = [], 16
        for stage in range(3):
            planes = 16 << stage
            for b in range(n):
                blocks.append(BasicBlock(c, planes, 2 if stage > 0 and b == 0 else 1, proj))
                c = planes
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def vgg(depth, in_c, in_hw, classes, width=64):
    layers, c, hw = [], in_c, in_hw
    for stage, convs in enumerate(VGG_STAGES[depth]):
        w = width << min(stage, 3)
        for _ in range(convs):
            layers += [nn.Conv2d(c, w, 3, 1, 1, bias=False), nn.BatchNorm2d(w), nn.ReLU()]
            c = w
        if hw >= 2:
            layers.append(nn.MaxPool2d(2))
            hw //= 2
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes)]
    return nn.Sequential(*layers)


def cnn(in_c, in_hw, classes, c1=32, c2=64, dense=(128,), pad=2):
    hw = ((in_hw + 2 * pad - 4) // 2 + 2 * pad - 4) // 2
    layers = [nn.Conv2d(in_c, c1, 5, padding=pad), nn.ReLU(), nn.MaxPool2d(2),
              nn.Conv2d(c1, c2, 5, padding=pad), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten()]
    d = hw * hw * c2
    for width in dense:
        layers += [nn.Linear(d, width), nn.ReLU()]
        d = width
    layers.append(nn.Linear(d, classes))
    return nn.Sequential(*layers)


class Dropout(nn.Dropout):
    """nn.Dropout, or, while `mask` is set, the product with that mask (its scale included)."""

    def __init__(self, p):
        super().__init__(p)
        self.mask = None

    def forward(self, x):
        if self.mask is None or not self.training:
            return super().forward(x)
        return x * self.mask.reshape(x.shape).to(x.dtype)


class Attention(nn.Module):
    """Causal multi-head self-attention with nn.MultiheadAttention's parameters (in_proj_weight
    (3D, D), in_proj_bias, out_proj) and arithmetic: q k^T / sqrt(D/H), the mask added, softmax,
    dropout on the probabilities, times v, heads side by side, out_proj. Called as
    nn.TransformerEncoderLayer calls its self_attn; without attn_mask the mask is causal."""

    def __init__(self, d, heads, dropout):
        super().__init__()
        self.heads = heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d))
        self.out_proj = nn.Linear(d, d)
        self.drop = Dropout(dropout)
        nn.init.xavier_uniform_(self.in_proj_weight)
        self.batch_first = True  # nn.TransformerEncoderLayer reads these of its self_attn
        self._qkv_same_embed_dim = True

    def forward(self, x, key=None, value=None, attn_mask=None, **kw):
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = F.linear(x, self.in_proj_weight, self.in_proj_bias).split(d, dim=2)
        q, k, v = (z.reshape(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
        if attn_mask is None:
            attn_mask = causal_mask(t, x.dtype, x.device)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)) + attn_mask
        att = self.drop(torch.softmax(att, dim=-1))
        o = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.out_proj(o), None


def causal_mask(t, dtype=torch.float32, device=None):
    """-inf above the diagonal: position i attends to 0..i (nn.Transformer's square subsequent
    mask)."""
    return torch.triu(torch.full((t, t), float("-inf"), dtype=dtype, device=device), 1)


class GPTBlock(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.attn = Attention(d, heads, dropout)
        self.fc = nn.Linear(d, 4 * d)
        self.proj = nn.Linear(4 * d, d)
        self.ln1 = nn.LayerNorm(d)
        self.ln2 = nn.LayerNorm(d)
        self.drop_attn = Dropout(dropout)
        self.drop_mlp = Dropout(dropout)

    def forward(self, x):
        x = x + self.drop_attn(self.attn(self.ln1(x))[0])
        return x + self.drop_mlp(self.proj(F.gelu(self.fc(self.ln2(x)))))


class GPT(nn.Module):
    """gpt:L,D,H,T[,P]: parameters in syncsim's view order (wte, wpe, per block the attention's
    in_proj weight and bias, out_proj, fc, proj, ln1, ln2, then lnf)."""

    def __init__(self, layers, d, heads, seq, dropout, vocab):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(GPTBlock(d, heads, dropout) for _ in range(layers))
        self.lnf = nn.LayerNorm(d)
        self.drop = Dropout(dropout)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.drop(self.wte(tokens) + self.wpe.weight[:t])
        for blk in self.blocks:
            x = blk(x)
        return F.linear(self.lnf(x), self.wte.weight)

    def dropout_sites(self):
        sites = {"emb": self.drop}
        for i, blk in enumerate(self.blocks):
            sites.update({f"h{i}.attn.probs": blk.attn.drop, f"h{i}.attn.out": blk.drop_attn,
                          f"h{i}.mlp.out": blk.drop_mlp})
        return sites


class WordLM(nn.Module):
    """gpt:wlm: examples/word_language_model's TransformerModel with syncsim's sizes; each block
    is PyTorch's own nn.TransformerEncoderLayer with Attention as its self_attn (same parameter
    names) and Dropout for its three dropouts. Parameters in syncsim's view order (encoder, per
    block in_proj, out_proj, linear1, linear2, norm1, norm2, then decoder)."""

    def __init__(self, vocab, d=200, heads=2, nhid=200, layers=2, seq=35, dropout=0.2):
        super().__init__()
        self.d = d
        self.encoder = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            layer = nn.TransformerEncoderLayer(d, heads, nhid, dropout, batch_first=True)
            layer.self_attn = Attention(d, heads, dropout)
            layer.dropout, layer.dropout1, layer.dropout2 = (Dropout(dropout) for _ in range(3))
            self.layers.append(layer)
        self.decoder = nn.Linear(d, vocab)
        self.drop = Dropout(dropout)
        # the sinusoids of Vaswani et al. 2017 (pe[t, 2i] = sin(t / 10000^(2i/D)), pe[t, 2i+1] the
        # cosine), in float64 and cast to the activations' type
        pos = torch.arange(seq, dtype=torch.float64).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
        pe = torch.zeros(seq, d, dtype=torch.float64)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)[:, :d // 2]
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        x = self.encoder(tokens) * math.sqrt(self.d)
        x = self.drop(x + self.pe[:t].to(x.dtype))
        mask = causal_mask(t, x.dtype, x.device)
        for layer in self.layers:
            x = layer(x, src_mask=mask)
        return self.decoder(x)

    def dropout_sites(self):
        sites = {"emb": self.drop}
        for i, layer in enumerate(self.layers):
            sites.update({f"h{i}.attn.probs": layer.self_attn.drop,
                          f"h{i}.attn.out": layer.dropout1, f"h{i}.mlp.hidden": layer.dropout,
                          f"h{i}.mlp.out": layer.dropout2})
        return sites


def gpt(opts, vocab):
    if opts in ("", "wlm", "selsync"):
        return WordLM(vocab)
    v = opts.split(",")
    if len(v) not in (4, 5):
        raise ValueError(f"gpt:{opts}: expected gpt:L,D,H,T[,P] or gpt:wlm")
    layers, d, heads, seq = (int(z) for z in v[:4])
    return GPT(layers, d, heads, seq, float(v[4]) if len(v) == 5 else 0.1, vocab)


def build(name, in_c=1, in_hw=28, classes=10):
    arch, _, opts = name.partition(":")
    if arch == "gpt":
        return gpt(opts, classes)
    if arch == "logreg":
        return nn.Sequential(nn.Flatten(), nn.Linear(in_c * in_hw * in_hw, classes))
    if arch == "mlp" and not opts:
        return nn.Sequential(nn.Flatten(), nn.Linear(in_c * in_hw * in_hw, 256), nn.ReLU(),
                             nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, classes))
    if arch == "cnn":
        if not opts:
            return cnn(in_c, in_hw, classes)
        if opts == "lenet":
            return cnn(in_c, in_hw, classes, 6, 16, (120, 84), pad=0)
        w = [int(v) for v in opts.split(",")]
        return cnn(in_c, in_hw, classes, w[0], w[1], tuple(w[2:]))
    if arch == "resnet":
        depth, _, opt = opts.partition(",")
        return ResNet(int(depth), in_c, classes, opt == "proj")
    if arch == "vgg":
        return vgg(int(opts), in_c, in_hw, classes)
    raise ValueError(f"unknown syncsim model '{name}' (valid: logreg, mlp, cnn, cnn:lenet, "
                     "cnn:C1,C2,D..., resnet:D[,proj], vgg:11|13|16|19, gpt:L,D,H,T[,P], "
                     "gpt:wlm)")


def param_count(module):
    return sum(p.numel() for p in module.parameters())
