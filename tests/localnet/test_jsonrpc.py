import httpx
from localnet_helpers import rpc
from solders.pubkey import Pubkey


def post(url: str, body: bytes | str) -> httpx.Response:
    return httpx.post(url, content=body, headers={"content-type": "application/json"})


def test_unknown_method(localnet):
    assert rpc(localnet.url, "getEverything")["error"] == {
        "code": -32601,
        "message": "Method not found",
    }


def test_bad_json_is_a_parse_error(localnet):
    answer = post(localnet.url, b'{"jsonrpc": "2.0", "method": ').json()
    assert answer == {
        "jsonrpc": "2.0",
        "error": {"code": -32700, "message": "Parse error"},
        "id": None,
    }


def test_bad_params(localnet):
    assert rpc(localnet.url, "getBalance", ["not-a-key"])["error"] == {
        "code": -32602,
        "message": "Invalid param: Invalid",
    }
    assert rpc(localnet.url, "getBalance", [])["error"]["code"] == -32602
    assert rpc(localnet.url, "getBalance", [str(Pubkey.new_unique()), 5])["error"]["code"] == -32602
    body = {"jsonrpc": "2.0", "id": 3, "method": "getBalance", "params": {"pubkey": "x"}}
    assert httpx.post(localnet.url, json=body).json()["error"]["code"] == -32602


def test_invalid_requests(localnet):
    answer = httpx.post(localnet.url, json={"id": 4, "method": "getSlot"}).json()
    assert answer["error"] == {"code": -32600, "message": "Invalid request"}
    assert answer["id"] == 4
    assert httpx.post(localnet.url, json=[]).json()["error"]["code"] == -32600


def test_batch_answers_each_request_in_order(localnet):
    key = str(Pubkey.new_unique())
    batch = [
        {"jsonrpc": "2.0", "id": "a", "method": "getBalance", "params": [key]},
        {"jsonrpc": "2.0", "id": "b", "method": "noSuchMethod"},
        {"jsonrpc": "2.0", "method": "getSlot"},  # a notification: no answer
        {"jsonrpc": "2.0", "id": 9, "method": "getHealth"},
        7,
    ]
    answers = httpx.post(localnet.url, json=batch).json()
    assert [answer["id"] for answer in answers] == ["a", "b", 9, None]
    assert answers[0]["result"]["value"] == 0
    assert answers[1]["error"]["code"] == -32601
    assert answers[2]["result"] == "ok"
    assert answers[3]["error"]["code"] == -32600


def test_notification_gets_no_body(localnet):
    response = httpx.post(localnet.url, json={"jsonrpc": "2.0", "method": "getSlot"})
    assert response.status_code == 204 and response.content == b""


def test_health_endpoint_and_keep_alive(localnet):
    with httpx.Client() as client:
        assert client.get(f"{localnet.url}/health").text == "ok"
        for _ in range(3):
            answer = client.post(
                localnet.url, json={"jsonrpc": "2.0", "id": 1, "method": "getSlot"}
            )
            assert answer.headers.get("connection", "keep-alive").lower() == "keep-alive"
