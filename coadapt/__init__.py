"""coadapt: test-time adaptation of Android GUI agents."""

__version__ = "0.1.0"


def _register_gym_env() -> None:
    """Register "coadapt/Android-v0" with Gymnasium by entry-point string: the env module (the
    simulator, the parser) is imported only when the env is made. Registering twice is a no-op."""
    try:
        import gymnasium
    except ImportError:  # coadapt itself needs no Gymnasium; without it there is just no env to make
        return
    if "coadapt/Android-v0" not in gymnasium.registry:
        gymnasium.register(id="coadapt/Android-v0", entry_point="coadapt.gym_env:AndroidEnv")


_register_gym_env()
