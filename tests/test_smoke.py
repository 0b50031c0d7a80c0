from toolrig import tool


def test_decorated_function_stays_callable() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert add(2, 3) == 5
    assert add.spec.name == "add"
    assert add.validate({"a": "2", "b": 3}) == {"a": 2, "b": 3}
