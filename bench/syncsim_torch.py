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
Batch norm is PyTorch's (momentum 0.1, eps 1e-5), as syncsim's.
"""
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


def build(name, in_c=1, in_hw=28, classes=10):
    arch, _, opts = name.partition(":")
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
                     "cnn:C1,C2,D..., resnet:D[,proj], vgg:11|13|16|19)")


def param_count(module):
    return sum(p.numel() for p in module.parameters())
