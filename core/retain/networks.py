"""Which network a fact belongs to, and whose it is: the notions every extractor shares.

The four networks of the Hindsight paper each have one epistemic role:

- **world**: what is so in the world, including what other people did, think
  and prefer. "Tomás prefers written code reviews" is a world fact about
  Tomás, whoever said it; the turn it came from names its speaker.
- **experience**: the bank's own agent's history, in its first person ("I
  booked the flights").
- **opinion**: the bank's own agent's beliefs, each with a confidence that
  evidence moves. Nobody else's belief is an opinion of the bank.
- **observation**: a profile of one entity, written from the facts later;
  never extracted.

The bank's agent is the profile's agent name. A statement without a speaker
(a note an agent retains through the API) is in the bank's own voice. Of a
question and its answer, the one who answers states the fact.

Rules mode (rules.py) and the language model's output (llm_extract.py) both
go through `file_fact` (via `facts.clean_fact`), so no extractor can file
another person's preference as the bank's opinion; `worth_keeping` is the one
test of what a statement must have to be a memory at all.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.retain.statements import is_filler, is_phatic, is_question
from core.types import Network

__all__ = ["BankAgent", "file_fact", "holder", "network_guide", "worth_keeping"]


@dataclass(frozen=True)
class BankAgent:
    """The agent whose memory the bank is: its name from the bank's profile ("" when
    the bank has none: then only speakerless notes are in its voice)."""

    name: str = ""

    @property
    def key(self) -> str:
        return self.name.strip().casefold()

    def is_agent(self, speaker: str) -> bool:
        """`speaker` is the agent itself, by name."""
        return bool(self.key) and speaker.strip().casefold() == self.key

    def owns(self, speaker: str) -> bool:
        """What `speaker` says is in the bank's own voice: the agent speaks, or
        nobody is named (a note retained without a speaker)."""
        return not speaker.strip() or self.is_agent(speaker)


def holder(speakers: Sequence[str]) -> str:
    """Who states a fact made of these speakers' turns (in turn order): the last
    one, since of a question and its answer the answer is what is stated."""
    return speakers[-1] if speakers else ""


def file_fact(network: Network, speakers: Sequence[str], agent: BankAgent) -> Network:
    """The network a fact belongs in, given the one an extractor chose.

    An opinion or an experience that is not the agent's own is a world fact:
    what another person thinks or did is something true of them."""
    if network in (Network.OPINION, Network.EXPERIENCE) and not agent.owns(holder(speakers)):
        return Network.WORLD
    return network


# A statement needs this many words to say something on its own;
# an answer needs fewer, its question says the rest ("Running." to "Walking or running?").
MIN_STATEMENT_WORDS = 2
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*|\d+")


def worth_keeping(
    sentence: str, names: frozenset[str] = frozenset(), *, answer: bool = False
) -> bool:
    """A statement a memory should hold: not a question, not a filler or a phatic
    phrase ("Thanks, Mel!", "Hope all's good!") once `names` (casefolded) are set
    aside, and, unless it is an `answer`, more than one word ("Guilty!")."""
    text = sentence.strip()
    if not text or is_question(text) or is_filler(text, names) or is_phatic(text, names):
        return False
    return answer or len(_WORD.findall(text)) >= MIN_STATEMENT_WORDS


def network_guide(agent: BankAgent) -> str:
    """The networks as a language model is told them, for this bank's agent."""
    if agent.key:
        name = agent.name.strip()
        return (
            f"- world: objective facts about people, places and things, including what "
            f'people other than {name} did, think or prefer ("Ana prefers tea", with '
            f"the speaker's turn as its source).\n"
            f"- experience: {name}'s own history, from {name}'s own turns only, in the "
            f'first person ("I booked the flights").\n'
            f"- opinion: {name}'s own beliefs, judgements or preferences only, in the first "
            "person; confidence is how strongly it is held, 0 to 1 (certain 0.9, sure 0.8, "
            "think 0.6, maybe 0.4). Other facts have confidence null. What someone else "
            "believes is a world fact about them, never an opinion."
        )
    return (
        "- world: objective facts about people, places and things, including what each "
        'speaker did, thinks or prefers ("Ana prefers tea").\n'
        "None of the speakers is the agent whose memory this is: never use experience or "
        "opinion; every fact is world, confidence null."
    )
