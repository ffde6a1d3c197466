"""From-scratch Transformer building blocks, one per module: attention (``attention``), its
padding and look-ahead masks (``masks``), sinusoidal and learned positions (``positional``),
feed-forward (``feed_forward``), add & norm (``normalization``), the encoder and decoder
(``encoder``, ``decoder``) and what their layers and stacks share (``stack``), pooling
(``pooling``) and width checks (``checks``); the masked-language-model head of pretraining
(``masked_lm``), the bags of n-grams of ``bow`` (``ngrams``) and ``nbow`` (``nb_ngrams``), where a token stands
in a negation's scope (``negation_scope``), a sentence's words' letter n-grams (``letters``), and
the class names a saved model carries (``class_names``). Keras 3 layers, ``keras.ops`` only.

It may import :mod:`classifier.errors` and :mod:`classifier.config`."""

from classifier.layers.attention import (
    MaskedAttention,
    MultiHeadAttention,
    attention_weights,
    scaled_dot_product_attention,
)
from classifier.layers.class_names import ClassNames
from classifier.layers.decoder import Decoder, DecoderLayer
from classifier.layers.encoder import Encoder, EncoderLayer, TransformerBlock
from classifier.layers.feed_forward import FeedForward
from classifier.layers.masked_lm import MaskedLMHead
from classifier.layers.masks import (
    attention_mask,
    causal_mask,
    combine_masks,
    padding_mask,
    to_keras_mask,
    to_tutorial_mask,
)
from classifier.layers.nb_ngrams import NaiveBayesNgrams
from classifier.layers.ngrams import BagOfNgrams
from classifier.layers.normalization import LayerNormalization
from classifier.layers.pooling import MaskedGlobalAveragePooling1D
from classifier.layers.positional import (
    POSITION_KINDS,
    PositionalEmbedding,
    SinusoidalPositionalEncoding,
    TokenAndPositionEmbedding,
    sinusoidal_position_encoding,
)

__all__ = [
    "POSITION_KINDS",
    "BagOfNgrams",
    "ClassNames",
    "Decoder",
    "DecoderLayer",
    "Encoder",
    "EncoderLayer",
    "FeedForward",
    "LayerNormalization",
    "MaskedAttention",
    "MaskedGlobalAveragePooling1D",
    "MaskedLMHead",
    "MultiHeadAttention",
    "NaiveBayesNgrams",
    "PositionalEmbedding",
    "SinusoidalPositionalEncoding",
    "TokenAndPositionEmbedding",
    "TransformerBlock",
    "attention_mask",
    "attention_weights",
    "causal_mask",
    "combine_masks",
    "padding_mask",
    "scaled_dot_product_attention",
    "sinusoidal_position_encoding",
    "to_keras_mask",
    "to_tutorial_mask",
]
