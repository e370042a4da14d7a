"""A framework from the decision-model ecosystem pointed at ``semif serve``: pydantic-ai's decision models
(``pydantic-ai-slim`` 2.78.0), which turn an agent's output type into questions and validate the answers strictly
(choice among the options, probabilities summing to 1, confidence in [0, 1], the score consistent with its
probabilities), over both wire formats: ``OpenAIDecisionsModel`` on ``/v1/decisions`` and ``SystemOneModel`` on
``/v1/systemone``. (langchain-openai's ``OpenAIDecisions`` installs here too; pydantic-ai is the stricter client.)"""

from __future__ import annotations

from typing import Literal

import pytest
from fakes import FakeBackend
from pydantic import BaseModel, Field
from pydantic_ai import Agent
from pydantic_ai.models.openai_decisions import OpenAIDecisionsModel
from pydantic_ai.models.system_one import SystemOneModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.providers.system_one import SystemOneProvider
from serve_helpers import live

from scorer import Scorer
from scorer.serving.service import build_app


class Ticket(BaseModel):
    refund: bool = Field(description="Does the customer ask for their money back?")
    team: Literal["billing", "tech", "sales"] = Field(description="Which team should handle the ticket?")


@pytest.mark.parametrize("dialect", ["decisions", "systemone"])
def test_a_pydantic_ai_agent_gets_its_typed_output_from_semif_serve(dialect):
    with Scorer(backend=FakeBackend(), mode="shared") as s, live(build_app(s)) as url:
        model = (OpenAIDecisionsModel("gpt-6-luna", provider=OpenAIProvider(base_url=f"{url}/v1", api_key="k"))
                 if dialect == "decisions"
                 else SystemOneModel("jev-latest", provider=SystemOneProvider(base_url=url, api_key="k")))
        out = Agent(model, output_type=Ticket).run_sync("I was charged twice for my order; refund me.").output
    assert isinstance(out, Ticket) and isinstance(out.refund, bool) and out.team in ("billing", "tech", "sales")
