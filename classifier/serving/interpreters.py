"""LiteRT interpreters as the bundle's engines use them: resized only when a batch's shape
changes, and created without LiteRT's note on stderr that it applies XNNPACK (``classify``
prints nothing on success). Imports only the standard library, NumPy and ``ai_edge_litert``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading

import numpy as np

#: What LiteRT prints on stderr (fd 2) the first time it applies XNNPACK in a process.
_DELEGATE_NOTE = b"INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\n"
_STDERR_CAUGHT = threading.Lock()


class ResizedInterpreter:
    """One LiteRT interpreter of a model of one input and one output, allocated for the input
    shape of its last call (it is resized only when a call's shape differs). One thread at a
    time uses it.

    Example (a bundle's classifier)::

        interpreter = ResizedInterpreter(Path("bundle/classifier.tflite").read_bytes(), None)
        interpreter.run(np.array([[5, 7, 2]]))  # (1, 2) probabilities
    """

    def __init__(self, model_content: bytes, num_threads: int | None):
        from ai_edge_litert.interpreter import Interpreter  # 0.02 to 0.15 s

        self.interpreter = Interpreter(model_content=model_content, num_threads=num_threads)
        (inputs,) = self.interpreter.get_input_details()
        (outputs,) = self.interpreter.get_output_details()
        self.input = inputs["index"]
        self.output = outputs["index"]
        self.shape: tuple[int, int] | None = None
        self.resizes = 0

    def run(self, token_ids: np.ndarray) -> np.ndarray:
        shape = (int(token_ids.shape[0]), int(token_ids.shape[1]))
        if shape != self.shape:
            self.interpreter.resize_tensor_input(self.input, shape, strict=False)
            if self.shape is None:
                without_delegate_note(self.interpreter.allocate_tensors)
            else:
                self.interpreter.allocate_tensors()
            self.shape = shape
            self.resizes += 1
        self.interpreter.set_tensor(self.input, token_ids)
        self.interpreter.invoke()
        return self.interpreter.get_tensor(self.output).copy()


def without_delegate_note(allocate) -> None:
    """Call ``allocate()`` with stderr's file descriptor caught, then pass on what it printed
    except LiteRT's note that it uses XNNPACK (``classify`` prints nothing on success). One
    thread at a time: fd 2 is the process's."""
    with _STDERR_CAUGHT:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError, AttributeError):  # no usable fd 2: nothing to keep clean
            allocate()
            return
        with tempfile.TemporaryFile() as caught:
            os.dup2(caught.fileno(), 2)
            try:
                allocate()
            finally:
                os.dup2(saved, 2)
                os.close(saved)
                caught.seek(0)
                rest = caught.read().replace(_DELEGATE_NOTE, b"", 1)
                if rest:
                    os.write(2, rest)
