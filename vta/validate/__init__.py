"""`validate_program`: the static checks every Program passes before any device runs it.

Five phases, each a function of its own (`find_problems` runs them in order):
1. structure (`structure.py`): decodable fields, dependence flags each module has, memory types
   per module and their form (padding, contiguity), FINISH last;
2. ranges (`ranges.py`, and `accesses.py` for micro-ops): SRAM/DRAM bounds, micro-op ranges and
   indices, loop counts, ALU opcodes of the configuration, REQ immediates;
3. memory initialisation (`initialisation.py`): no read of SRAM never written;
4. tokens and deadlock (`tokens.py`): balanced queues within capacity, no deadlock, and the
   happens-before order of a run;
5. hazards (`hazards.py`): GEMM same-row writes, races between modules on shared buffers.
Findings name the instruction index and field and say what would be valid. Decoding is
vectorized over the whole stream and each distinct GEMM/ALU instruction is analysed once, so
about 100k instructions validate in about a second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ValidationError
from .accesses import trace_accesses
from .hazards import check_gemm_hazards, check_races
from .initialisation import check_initialisation
from .ranges import check_ranges
from .stream import MAX_PER_CHECK, Stream, decode_columns
from .structure import check_decoding, check_dependence_flags, check_finish, check_memory_types
from .tokens import check_tokens

if TYPE_CHECKING:
    from ..program import Program

__all__ = ["MAX_PER_CHECK", "decode_columns", "find_problems", "validate_program"]


def validate_program(program: Program) -> None:
    """Raise `ValidationError` listing every problem found in `program`."""
    problems = find_problems(program)
    if problems:
        raise ValidationError(problems)


def find_problems(program: Program) -> list[str]:
    """Every problem found in `program`, one message each (empty if it is valid)."""
    s = Stream(program)
    problems = check_decoding(s)
    if problems:  # the other phases read the decoded opcodes and memory types
        return list(problems)
    problems += check_dependence_flags(s)
    problems += check_memory_types(s)
    range_findings, extents = check_ranges(s)
    problems += range_findings
    token_findings, order = check_tokens(s)
    problems += token_findings
    micro_op_findings, accesses = trace_accesses(s, extents)
    problems += micro_op_findings
    problems += check_initialisation(s, accesses)
    problems += check_gemm_hazards(s, accesses)
    if order is not None:
        problems += check_races(s, accesses, order)
    problems += check_finish(s)
    return list(problems)
