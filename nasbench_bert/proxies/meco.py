"""MeCo (Jiang, Wang & Bie, *Zero-shot NAS via the Minimum Eigenvalue of Pearson
Correlation on Intermediate Features*, NeurIPS 2023).

The definition (the authors' ``measures/meco.py``, ``get_score``): a forward hook on
every module takes the module's feature map for one input, reshapes it to
(channels, positions), forms the Pearson correlation matrix of the channels
(``torch.corrcoef``, channels x channels, NaN and inf entries - from constant channels -
set to 0) and keeps its smallest eigenvalue. MeCo is the sum of these minima over the
hooked modules (NaN minima left out). Higher is better: the paper ties the smallest
eigenvalue of the feature correlation to the convergence rate and generalisation of the
network.

Adaptations to a language model, and why:

* **Input.** The authors' code discards the data it is given and draws its own
  1 x 3 x 64 x 64 Gaussian image (``torch.randn``, unseeded). Here the input is the
  proxy batch's tokens, the same tokens every other proxy sees, so the value is
  reproducible and computed on the model's own input domain.
* **Channels and positions.** For an image feature map (C, H, W) a channel is one of
  the C feature maps and a position one of the H x W pixels. For a (batch, tokens,
  hidden) feature map a channel is one hidden unit (the last axis, what a ``Linear``
  or the DSC ``Conv1d`` calls its channels) and a position is one token of one sequence:
  every non-padding token of the batch (the ``attention_mask``) is a position, so the
  matrix is hidden x hidden, estimated from B x T positions. The authors feed one image
  with 4,096 pixels; one sequence has only T = 128 tokens, fewer than the hidden units
  (128 or 256), and its correlation matrix would be singular by construction (rank <=
  T - 1): that is why the positions are the tokens of the whole batch (the default 8 x
  128 = 1,024 > 256). Where a map has no more positions than channels (a small batch),
  its correlation matrix is singular and its smallest eigenvalue is 0 by the
  definition; the value is then that exact 0, not the solver's rounding noise. (The
  authors' hook, applied unchanged to a (1, T, H) output, would take the sample's T
  tokens as its rows: a token-by-token matrix, singular whenever H <= T, i.e. for every
  128-wide arch at T = 128.)
* **Which feature maps.** One per encoder layer: the layer's output *before* its final
  LayerNorm (the residual sum the feed-forward block's ``norm`` receives), not every
  module's output. Why not the LayerNorm output itself: LayerNorm centres every token
  over its hidden units, so sum_c sigma_c * z_c = 0 at every position for the
  standardised channels z_c - the correlation matrix of any LayerNorm output (every
  FlexiBERT layer's output, post-LN) has the eigenvalue 0 exactly, and MeCo would be 0
  for every arch. Why not every module: the authors hook every module of a CNN, where
  (nearly) every output is a (C, H, W) map of one kind; inside a transformer layer most
  outputs are not - attention probabilities (heads x T x T, rows summing to 1: singular
  too), per-head reshapes, LayerNorm outputs (0, above), and the query/key/value and
  feed-forward projections with their GELUs (several views of one layer's computation,
  each counted again). The embedding output, before any searched layer, is left out.
  The proxy runs its own forward (``needs={"model"}``; no gradient): under ``authors``
  in train mode (dropout on) with torch's generator seeded by the proxy seed, else in
  eval mode. Note that on FlexiBERT the maps are close to singular at initialisation
  for a structural reason: the 128-wide embedding (a 128 -> 256 projection for
  256-wide archs; a LayerNorm output for 128-wide ones) spans fewer directions than the
  residual stream has units, and each layer adds a small full-rank update to it, so the
  smallest eigenvalues are small (about 1e-7 to 1e-3) and measure those updates.
* **NAS-Bench-NLP.** An RNN layer's feature map is its hidden-state sequence, (T, B, H):
  channels are the hidden units, positions are (step, sequence) pairs. The shared pass
  records each layer's incoming states h_{t-1}; dropping the zero initial state leaves
  the layer's outputs at steps 0 ... T-2, i.e. (T - 1) x B positions (the default 69 x 10
  = 690 for hidden sizes 600, 600, 400).

The eigenvalues are those of the symmetric correlation matrix (``eigvalsh``, float64);
the authors' general solver (``torch.linalg.eig``, real parts) gives the same values up
to rounding, which the reference test (``tests/reference/test_zico_meco_reference.py``) checks by
feeding each layer's feature map to the authors' hook.
"""

from __future__ import annotations

import math
from typing import Sequence

from .._torch import torch

from .capture import Capture
from .common import host_values
from .registry import ProxyValue, register


def smallest_correlation_eigenvalue(channels: torch.Tensor) -> float:
    """MeCo's per-feature-map term: the smallest eigenvalue of the Pearson correlation
    matrix of the rows of ``channels`` (channels x positions), NaN/inf entries set to 0
    as the authors do; exactly 0 when positions <= channels (singular by construction)."""
    return host_values([_smallest(channels)])[0]


def _smallest(channels: torch.Tensor) -> float | torch.Tensor:
    """:func:`smallest_correlation_eigenvalue` left on the device (0-dim), or 0.0."""
    c, n = channels.shape
    if n <= c:
        return 0.0
    corr = torch.corrcoef(channels.double())
    corr[~torch.isfinite(corr)] = 0
    return torch.linalg.eigvalsh(corr)[0]


def meco_from_feature_maps(maps: Sequence[torch.Tensor]) -> ProxyValue:
    """MeCo of feature maps given as (positions, channels): the sum of each map's term,
    NaN terms left out of the sum (the authors' code) and kept per layer."""
    per = host_values(_smallest(m.T) for m in maps)  # one host copy for the model, not one per layer
    return ProxyValue(sum(v for v in per if not math.isnan(v)), per)


def _pre_norm_maps(cap: Capture) -> list[torch.Tensor]:
    """Each encoder layer's output before its final LayerNorm, (positions, hidden), over
    the batch's non-padding tokens, from one forward of the fresh model."""
    model, b = cap.model, cap.batch
    got: list[torch.Tensor] = []
    handles = [layer.feed_forward.norm.register_forward_hook(lambda m, i, o: got.append(i[0].detach()))
               for layer in model.layers]
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(int(cap.extra["seed"]))  # dropout masks under ``authors`` (train mode)
            model(b.input_ids, b.attention_mask, b.token_type_ids)
    finally:
        for h in handles:
            h.remove()
    keep = None if b.attention_mask is None else b.attention_mask.bool()
    return [s.reshape(-1, s.shape[-1]) if keep is None else s[keep] for s in got]


@register("meco", space="flexibert", needs={"model"}, group=("standard",))
def meco_flexibert(cap: Capture) -> ProxyValue:
    """MeCo (Jiang et al., NeurIPS 2023): sum over encoder layers of the smallest eigenvalue of
    the hidden-unit correlation matrix of the pre-LayerNorm output over the batch's tokens."""
    return meco_from_feature_maps(_pre_norm_maps(cap))


@register("meco", space="nlp", needs={"hidden_states"}, group=("standard",))
def meco_nlp(cap: Capture) -> ProxyValue:
    """MeCo (Jiang et al., NeurIPS 2023) on the recipe LM: sum over RNN layers of the smallest
    eigenvalue of the hidden-unit correlation matrix over (step, sequence) positions."""
    return meco_from_feature_maps([s[1:].reshape(-1, s.shape[-1]) for s in cap.hidden_states])
