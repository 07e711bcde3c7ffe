# Before any test module imports oslo.messaging: the agent's package picks
# oslo.service's threading backend (see compute_agent/__init__.py).
import compute_agent  # noqa: F401
