"""ragen_torch: the PyTorch worker behind ragen-ts's `model.engine: torch` (see docs/gpu.md).

Started by src/engine/torch.ts as `python -m ragen_torch`; speaks the framed protocol of protocol.py on stdin/stdout.
"""

PROTOCOL_VERSION = 1
