"""Grad modes: no_grad, enable_grad, set_grad_enabled, is_grad_enabled (thread-local)."""

import functools
import threading

class _GradState(threading.local):
    """Per-thread grad mode; the class attribute is every new thread's default."""

    enabled = True


_state = _GradState()
# How many threads have gradients disabled now. Zero: no thread has, so a gradient's call
# need not read its own thread's state (api.py). A thread's count goes up before its state
# turns off, so a thread whose state is off always sees it above zero; one that ends with
# gradients off leaves it above zero, and calls read their state again, as before.
OFF = [0]
_off_lock = threading.Lock()


def is_grad_enabled():
    """Whether gradients may be requested in this thread (True unless inside no_grad)."""
    return _state.enabled


def _set(mode):
    mode = bool(mode)
    with _off_lock:
        was = _state.enabled
        if was and not mode:
            OFF[0] += 1
        _state.enabled = mode
        if mode and not was:
            OFF[0] -= 1


def check_grad_enabled():
    if not is_grad_enabled():
        raise RuntimeError(
            "element 0 of tensors does not require grad and does not have a grad_fn: gradients "
            "are disabled here (inside srcgrad.no_grad() or set_grad_enabled(False)). A backward "
            "obtained from vjp earlier still works.")


class _GradMode:
    """Base of the grad-mode context managers; each is also a decorator."""

    mode = True

    def __enter__(self):
        self.prev = is_grad_enabled()
        _set(self.mode)
        return self

    def __exit__(self, *exc):
        _set(self.prev)
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            previous = is_grad_enabled()
            _set(mode)
            try:
                return fn(*args, **kwargs)
            finally:
                _set(previous)
        # A differentiated function calling a no_grad helper gets constants back.
        wrapper.__srcgrad_grad_mode__ = mode
        return wrapper


class no_grad(_GradMode):
    """Context manager (and decorator): no gradients may be asked for inside."""

    mode = False


class enable_grad(_GradMode):
    """Context manager (and decorator): re-enable gradients inside a no_grad block."""

    mode = True


class set_grad_enabled(_GradMode):
    """Context manager (and function): enable or disable gradients by a flag."""

    def __init__(self, mode):
        self.prev = is_grad_enabled()
        self.mode = bool(mode)
        _set(self.mode)

    def __call__(self, fn):
        # As a decorator it must not leave the mode changed (PyTorch does the same).
        _set(self.prev)
        return super().__call__(fn)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(self.prev)
        return False


def detach(x):
    """``x`` as a constant: no gradient flows back through it (PyTorch's ``.detach()``)."""
    return x


stop_gradient = detach


class HookHandle:
    """What ``register_hook`` returns; ``remove()`` exists for PyTorch-style code."""

    def remove(self):
        pass


def register_hook(value, hook):
    """Inside a differentiated function: call ``hook(grad)`` with ``value``'s complete gradient.

    If the hook returns an array, it replaces the gradient. Outside a function
    srcgrad differentiates this does nothing.
    """
    return HookHandle()
