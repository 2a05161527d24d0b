from piton.core.display import counted


def test_a_count_agrees_with_its_noun() -> None:
    assert counted(1, "tool call") == "1 tool call"
    assert counted(2, "tool call") == "2 tool calls"
    assert counted(0, "exchange") == "0 exchanges"
    assert counted(3, "match") == "3 matches"
    assert counted(1_200, "reply", "replies") == "1,200 replies"
