"""Context wrappers: what v2 adds to an agent, as plain functions plus thin LangChain middleware.

The lesson (called by ``agents/v2.py``'s two hooks):

- ``offload``: a large tool result goes to scratch/, a typed preview stays (``maybe_offload``).
- ``summarize``: near the budget, older messages become a summary that names its
  archive file, with the user's original goal copied verbatim (``maybe_summarize``).
- ``archive``: every message that leaves the context is kept unchanged, append-only,
  written atomically, searchable (``ConversationArchive``, the ``search_archive`` tool).
- ``budget``: the budget the wrappers manage to, passed to each of them (``ContextBudget``).

What can go wrong, in one place (``resilience.py``, which v2 adds in one line: ``with_guards``, the
lesson's middleware in the list with each guard beside it): back-off, compaction with no model,
overflow retry, window learning, calibration, and

- ``readback``: reading scratch/ or archives/ back returns a page that fits under the trigger;
- ``budget_guard``: no request over the budget, whatever one turn brings in (a turn's results
  offloaded by their total, workspace reads paged, the largest results stubbed as a last resort:
  ``budget_guards``, which v2 adds in one line);
- ``repair``: a tool call without a result gets a stand-in result (``repair_tool_calls``);
  a tool call cut off mid-arguments is answered, never run (``cut_off_tool_calls``).

Each module's docstring states its rules, thresholds and exact texts. The
wrappers know nothing of agent versions; an agent picks which ones it uses.
"""

from flawedcode.context.archive import ArchiveError, ConversationArchive, make_search_archive_tool
from flawedcode.context.budget import ContextBudget
from flawedcode.context.budget_guard import BudgetGuardMiddleware, budget_guards, fit_to_budget
from flawedcode.context.offload import exempt_tools, maybe_offload, offload, should_offload
from flawedcode.context.readback import ReadBackPagingMiddleware
from flawedcode.context.repair import (
    CutOffToolCallsMiddleware,
    RepairToolCallsMiddleware,
    cut_off_tool_calls,
    repair_tool_calls,
)
from flawedcode.context.resilience import SummaryBackoff, compact, with_guards
from flawedcode.context.summarize import (
    SummaryOutcome,
    choose_cutoff,
    maybe_summarize,
    original_goal,
    should_summarize,
    summarize,
)

__all__ = [
    "ArchiveError", "ConversationArchive", "make_search_archive_tool",
    "ContextBudget", "BudgetGuardMiddleware", "budget_guards", "fit_to_budget",
    "exempt_tools", "maybe_offload", "offload", "should_offload",
    "ReadBackPagingMiddleware",
    "CutOffToolCallsMiddleware", "RepairToolCallsMiddleware", "cut_off_tool_calls", "repair_tool_calls",
    "SummaryBackoff", "compact", "with_guards",
    "SummaryOutcome", "choose_cutoff", "maybe_summarize", "original_goal", "should_summarize", "summarize",
]
