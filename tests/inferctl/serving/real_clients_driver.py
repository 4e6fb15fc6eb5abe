"""Run in the real clients' virtualenv (.venv-clients, requirements-clients.txt) by test_real_clients.py: LangChain,
instructor and litellm, each as its users call it, against the local stack's edge. Prints one JSON object with what
each returned; the test judges it. Standard library plus those clients only (this file is not imported by the suite).

    python real_clients_driver.py <base url ending in /v1> <api key> <model> <check>
"""

from __future__ import annotations

import json
import sys
from typing import Any

# The stand-in fills a free string with the echo of the last user turn, which carries the rendered tools (Llama 3.1's
# template): room for it, so that no call is cut at max_tokens.

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 30},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
    },
    "required": ["city", "days"],
    "additionalProperties": False,
}


def langchain_bind_tools(base: str, key: str, model: str) -> dict[str, Any]:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def get_weather(city: str, days: int) -> str:
        """The weather in a city for a number of days."""
        return f"{city}: sunny for {days} days"

    llm = ChatOpenAI(model=model, base_url=base, api_key=key, max_retries=0, max_tokens=2000)
    forced = llm.bind_tools([get_weather], tool_choice="get_weather").invoke("Weather in Lyon for 2 days?")
    auto = llm.bind_tools([get_weather]).invoke("hello there")
    return {
        "forced": forced.tool_calls,
        "invalid": forced.invalid_tool_calls,
        "raw": forced.additional_kwargs,
        "auto_content": auto.content,
        "auto_calls": auto.tool_calls,
    }


def langchain_structured(base: str, key: str, model: str) -> dict[str, Any]:
    from langchain_openai import ChatOpenAI
    from pydantic import BaseModel, Field

    class Forecast(BaseModel):
        city: str = Field(max_length=30)
        days: int

    llm = ChatOpenAI(model=model, base_url=base, api_key=key, max_retries=0, max_tokens=2000)
    by_schema = llm.with_structured_output(Forecast).invoke("Weather in Lyon for 2 days?")
    by_tools = llm.with_structured_output(Forecast, method="function_calling").invoke("Weather in Lyon?")
    return {"json_schema": by_schema.model_dump(), "function_calling": by_tools.model_dump()}


def instructor_tools(base: str, key: str, model: str) -> dict[str, Any]:
    import instructor
    from openai import OpenAI
    from pydantic import BaseModel, Field

    class Forecast(BaseModel):
        city: str = Field(max_length=30)
        days: int

    client = instructor.from_openai(OpenAI(base_url=base, api_key=key, max_retries=0))  # default mode: TOOLS
    forecast = client.chat.completions.create(
        model=model, response_model=Forecast, max_tokens=2000, max_retries=0,
        messages=[{"role": "user", "content": "Weather in Lyon for 2 days?"}],
    )  # fmt: skip
    return {"mode": str(client.mode), "forecast": forecast.model_dump()}


def litellm_tools(base: str, key: str, model: str) -> dict[str, Any]:
    import litellm

    tools = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                               "parameters": WEATHER_SCHEMA}}]  # fmt: skip
    reply = litellm.completion(
        model=f"openai/{model}", api_base=base, api_key=key, max_tokens=2000, tools=tools, tool_choice="required",
        messages=[{"role": "user", "content": "Weather in Lyon for 2 days?"}],
    )  # fmt: skip
    calls = reply.choices[0].message.tool_calls or []
    streamed = litellm.completion(
        model=f"openai/{model}", api_base=base, api_key=key, max_tokens=20, stream=True,
        messages=[{"role": "user", "content": "stream this back"}],
    )  # fmt: skip
    text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
    return {
        "calls": [{"name": c.function.name, "arguments": c.function.arguments} for c in calls],
        "finish_reason": reply.choices[0].finish_reason,
        "streamed": text,
    }


CHECKS = {f.__name__: f for f in (langchain_bind_tools, langchain_structured, instructor_tools, litellm_tools)}

if __name__ == "__main__":
    base, key, model, check = sys.argv[1:5]
    print(json.dumps(CHECKS[check](base, key, model), default=str))
