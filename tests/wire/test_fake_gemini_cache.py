"""The fake Gemini API's cachedContents (tests/fake_gemini_cache.py) refuses what Google
refuses, with Google's messages: a wire test of blitz's context caching proves something only
if a cache the service would not make, or a request it would not take, fails here too."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.fake_gemini import FakeGeminiServer

KEY = "AIza-fake-cache-key"
HEADERS = {"x-goog-api-key": KEY}
BIG = {"parts": [{"text": "Stay on topic. " * 400}]}  # ~1,500 of the fake's tokens
USER = {"role": "user", "parts": [{"text": "hi"}]}
TOOLS = [{"functionDeclarations": [{"name": "read_file", "description": "read a file"}]}]


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def create(server: FakeGeminiServer, **fields: Any) -> httpx.Response:
    body = {"model": "models/gemini-2.5-flash", "systemInstruction": BIG, "tools": TOOLS, "ttl": "300s", **fields}
    return httpx.post(f"{server.base_url}/cachedContents", json=body, headers=HEADERS)


def generate(server: FakeGeminiServer, body: dict[str, Any], model: str = "gemini-2.5-flash") -> httpx.Response:
    return httpx.post(f"{server.base_url}/models/{model}:generateContent", json=body, headers=HEADERS)


@pytest.mark.parametrize(
    ("fields", "status", "words"),
    [
        ({"model": "models/gemini-9"}, 404, "models/gemini-9 is not found for API version v1beta"),
        ({"model": ""}, 400, "model is not specified"),
        ({"ttl": "5m"}, 400, "Invalid value at 'cached_content.ttl' (type.googleapis.com/google.protobuf.Duration)"),
        ({"ttl": "0s"}, 400, "ttl must be positive"),
        ({"ttl": None, "expireTime": "2020-01-01T00:00:00Z"}, 400, "must be in the future"),
        ({"expireTime": "2099-01-01T00:00:00Z"}, 400, "only one of ttl and expire_time"),
        ({"systemInstruction": {"parts": [{"text": "short"}]}, "tools": []}, 400, "Cached content is too small."),
        ({"contents": [USER, USER]}, 400, "alternate between user and model"),
    ],
)
def test_a_cache_is_refused_as_google_refuses_it(fields: dict[str, Any], status: int, words: str) -> None:
    with FakeGeminiServer(api_key=KEY, models={"gemini-2.5-flash"}) as server:
        answer = create(server, **fields)
        assert answer.status_code == status, answer.text
        assert words in answer.json()["error"]["message"]
        assert server.cache.names() == []


def test_too_small_names_both_counts_as_google_does() -> None:
    with FakeGeminiServer(api_key=KEY, min_cache_tokens=4096) as server:
        message = create(server).json()["error"]["message"]
        assert message.startswith("Cached content is too small. total_token_count=")
        assert message.endswith(", min_total_token_count=4096")


def test_a_cache_is_made_listed_read_and_deleted_and_it_expires() -> None:
    clock = Clock()
    with FakeGeminiServer(api_key=KEY, clock=clock) as server:
        made = create(server, displayName="prefix-hash").json()
        assert made["name"].startswith("cachedContents/") and made["displayName"] == "prefix-hash"
        assert made["usageMetadata"]["totalTokenCount"] >= 1024
        assert made["expireTime"].endswith("Z")
        listed = httpx.get(f"{server.base_url}/cachedContents", headers=HEADERS).json()
        assert [c["name"] for c in listed["cachedContents"]] == [made["name"]]
        one = httpx.get(f"{server.base_url}/{made['name']}", headers=HEADERS)
        assert one.status_code == 200 and "contents" not in one.json()
        assert httpx.get(f"{server.base_url}/cachedContents").status_code == 403  # no key
        clock.now += 301
        assert httpx.get(f"{server.base_url}/cachedContents", headers=HEADERS).json() == {}
        gone = httpx.get(f"{server.base_url}/{made['name']}", headers=HEADERS)
        assert (
            gone.status_code == 403
            and gone.json()["error"]["message"] == "CachedContent not found (or permission denied)"
        )
        second = create(server).json()["name"]
        assert httpx.delete(f"{server.base_url}/{second}", headers=HEADERS).status_code == 200
        assert httpx.delete(f"{server.base_url}/{second}", headers=HEADERS).status_code == 403


def test_listing_is_paged() -> None:
    with FakeGeminiServer(api_key=KEY) as server:
        server.cache_page_size = 2
        names = [create(server).json()["name"] for _ in range(3)]
        first = httpx.get(f"{server.base_url}/cachedContents", headers=HEADERS).json()
        assert [c["name"] for c in first["cachedContents"]] == names[:2]
        rest = httpx.get(
            f"{server.base_url}/cachedContents", params={"pageToken": first["nextPageToken"]}, headers=HEADERS
        ).json()
        assert [c["name"] for c in rest["cachedContents"]] == names[2:] and "nextPageToken" not in rest


def test_generate_content_reads_the_cache_and_refuses_what_google_refuses() -> None:
    with FakeGeminiServer(api_key=KEY) as server:
        name = create(server).json()["name"]
        tokens = server.cache.created[0].tokens
        server.enqueue({"text": "From the cache."})
        answer = generate(server, {"contents": [USER], "cachedContent": name})
        assert answer.status_code == 200, answer.text
        usage = answer.json()["usageMetadata"]
        assert usage["cachedContentTokenCount"] == tokens and usage["promptTokenCount"] > tokens
        beside = generate(server, {"contents": [USER], "cachedContent": name, "systemInstruction": BIG})
        assert beside.status_code == 400
        assert beside.json()["error"]["message"].startswith(
            "CachedContent can not be used with GenerateContent request setting system_instruction, tools or tool_config."
        )
        assert generate(server, {"contents": [USER], "cachedContent": name, "tools": TOOLS}).status_code == 400
        other = generate(server, {"contents": [USER], "cachedContent": name}, model="gemini-2.5-pro")
        assert other.status_code == 400
        assert other.json()["error"]["message"] == (
            "Model used by GenerateContent request (models/gemini-2.5-pro) and CachedContent "
            "(models/gemini-2.5-flash) has to be the same."
        )
        unknown = generate(server, {"contents": [USER], "cachedContent": "cachedContents/nope1"})
        assert unknown.status_code == 403
        # the cache's contents and the request's are one conversation, checked as a whole
        server.enqueue({"text": "never"})
        call = {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {}}}]}
        unanswered = generate(server, {"contents": [USER, call], "cachedContent": name})
        assert unanswered.status_code == 400 and server.pending_steps == 1
