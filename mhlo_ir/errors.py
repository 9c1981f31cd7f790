"""Exceptions raised while building and checking programs."""

__all__ = ["IRError", "OpBuildError", "ModuleVerificationError"]


class IRError(Exception):
    """A structural misuse of the IR (wrong container, missing piece)."""


class OpBuildError(IRError, TypeError):
    """An operation could not be built: the message names the op, the operand or attribute,
    and what was expected versus what was given."""


class ModuleVerificationError(IRError):
    """A whole-module check failed (use before definition, bad terminator, return mismatch,
    an op edited into a state its rules reject). The only error ``Module.verify`` raises: the
    message names the function, the op and its location, and what was expected."""
