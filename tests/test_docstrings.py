"""Tool and parameter descriptions from Google, NumPy and Sphinx docstrings."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import Field

from toolrig import Tool, tool
from toolrig._schemas.docstrings import DocInfo, parse_docstring

GOOGLE = """Get the forecast for a city.

    Looks the city up first, then asks the weather
    service.

    Args:
        city: The city name,
            for example "Paris".
        days (int): How many days ahead.

    Keyword Args:
        units: "metric" or "imperial".

    Returns:
        The forecast as text.

    Raises:
        LookupError: unknown city.
    """

NUMPY = """Get the forecast for a city.

    Looks the city up first, then asks the weather
    service.

    Parameters
    ----------
    city : str
        The city name,
        for example "Paris".
    days : int, optional
        How many days ahead.

    Other Parameters
    ----------------
    units : str
        "metric" or "imperial".

    Returns
    -------
    str
        The forecast as text.
    """

SPHINX = """Get the forecast for a city.

    Looks the city up first, then asks the weather
    service.

    :param city: The city name,
        for example "Paris".
    :param days: How many days ahead.
    :type days: int
    :keyword units: "metric" or "imperial".
    :returns: The forecast as text.
    :raises LookupError: unknown city.
    """

EXPECTED = DocInfo(
    description="Get the forecast for a city.\n\nLooks the city up first, then asks the weather\nservice.",
    params={"city": 'The city name, for example "Paris".', "days": "How many days ahead.",
            "units": '"metric" or "imperial".'},
    returns="The forecast as text.",
)


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, SPHINX], ids=["google", "numpy", "sphinx"])
def test_each_style_gives_description_params_and_returns(doc: str) -> None:
    assert parse_docstring(doc) == EXPECTED


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, SPHINX], ids=["google", "numpy", "sphinx"])
def test_each_style_reaches_the_tool_schema(doc: str) -> None:
    def forecast(city: str, days: int = 1, units: str = "metric") -> str:
        return city

    forecast.__doc__ = doc
    t = tool(forecast)
    assert t.spec.description == EXPECTED.description
    props = t.spec.input_schema["properties"]
    assert props["city"] == {"type": "string", "description": 'The city name, for example "Paris".'}
    assert props["days"] == {"type": "integer", "default": 1, "description": "How many days ahead."}
    assert props["units"]["description"] == '"metric" or "imperial".'


def test_google_keyword_args_section_is_read() -> None:
    # Before the fix "Keyword Args:" (Napoleon's name) was ignored and `units` had no description.
    info = parse_docstring("Do it.\n\nArgs:\n    a: first.\n\nKeyword Arguments:\n    b: second.\n")
    assert info.params == {"a": "first.", "b": "second."}


def test_epydoc_style() -> None:
    info = parse_docstring("Summary.\n\n@param x: the x.\n@return: result.")
    assert info.params == {"x": "the x."}
    assert info.returns == "result."


def test_summary_only_and_empty() -> None:
    assert parse_docstring("  Just a summary.  ") == DocInfo(description="Just a summary.")
    assert parse_docstring(None) == DocInfo()
    assert parse_docstring("   \n  ") == DocInfo()


def test_params_without_description_are_left_out() -> None:
    assert parse_docstring("S.\n\n:param x: one\n:param y:").params == {"x": "one"}


def test_unreadable_sections_stay_in_the_description() -> None:
    info = parse_docstring("Summary.\n\n:param a b c d: x")
    assert info.description.startswith("Summary.")
    assert info.params == {}


def test_field_description_wins_over_docstring() -> None:
    @tool
    def f(city: Annotated[str, Field(description="From the field.")], days: int = Field(1, description="F2")) -> str:
        """Forecast.

        Args:
            city: From the docstring.
            days: Also from the docstring.
        """
        return city

    props = f.spec.input_schema["properties"]
    assert props["city"]["description"] == "From the field."
    assert props["days"]["description"] == "F2"


def test_explicit_description_option_wins() -> None:
    @tool(description="Given explicitly.")
    def f(x: int) -> int:
        """From the docstring.

        Args:
            x: The x.
        """
        return x

    assert f.spec.description == "Given explicitly."
    assert f.spec.input_schema["properties"]["x"]["description"] == "The x."


def test_docstring_params_for_undeclared_names_are_ignored() -> None:
    @tool
    def f(x: int) -> int:
        """Doc.

        Args:
            x: The x.
            ghost: Not a parameter.
        """
        return x

    assert set(f.spec.input_schema["properties"]) == {"x"}


def test_tool_class_docstring_is_parsed_not_copied() -> None:
    # Before the fix the description was the raw class docstring, "Args:" section included,
    # and parameters documented there got no description.
    class Forecast(Tool):
        """Get the forecast for a city.

        Args:
            city: The city name.
        """

        def run(self, city: str) -> str:
            return city

    assert Forecast.spec.description == "Get the forecast for a city."
    assert Forecast.spec.input_schema["properties"]["city"]["description"] == "The city name."


def test_tool_class_run_docstring_params_win() -> None:
    class Forecast(Tool):
        """Get the forecast.

        Args:
            city: From the class.
            days: Days, from the class.
        """

        def run(self, city: str, days: int = 1) -> str:
            """Run.

            Args:
                city: From run.
            """
            return city

    props = Forecast.spec.input_schema["properties"]
    assert props["city"]["description"] == "From run."
    assert props["days"]["description"] == "Days, from the class."
    assert Forecast.spec.description == "Get the forecast."


def test_tool_class_description_from_run_when_class_has_no_docstring() -> None:
    class Echo(Tool):
        def run(self, text: str) -> str:
            """Echo the text back.

            Args:
                text: What to echo.
            """
            return text

    assert Echo.spec.description == "Echo the text back."
    assert Echo.spec.input_schema["properties"]["text"]["description"] == "What to echo."


# -- only the styles whose headers can occur are run: the same reading as running all four --------------
from docstring_parser import Docstring, ParseError  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from toolrig._schemas import docstrings as _docstrings  # noqa: E402


def _every_style(text: str) -> Docstring | None:
    best: Docstring | None = None
    for parse in _docstrings._PARSERS:
        try:
            parsed = parse(text)
        except ParseError:
            continue
        if best is None or len(parsed.meta) > len(best.meta):
            best = parsed
    return best


def _outcome(read: Any, doc: str) -> tuple[str, Any]:
    """The reading, or the exception type (docstring_parser's reST reader raises IndexError on ': : ', as before)."""
    try:
        return "read", read(doc)
    except Exception as exc:
        return "raised", type(exc)


def _same(a: _docstrings._Reading | None, b: Docstring | None) -> bool:
    """Whether toolrig's reading is docstring_parser's (``b``): description, parameters, returns, sections."""
    if a is None or b is None:
        return a is None and b is None
    return a == _docstrings._reading(b)


_FRAGMENTS = ["Get the forecast.", "\n", "\n\n", "    ", "Args:", "Returns:", "Raises:", "Keyword Args:",
              "city: the city", "days (int): how many", "Parameters", "----------", "Returns\n-------", "city : str",
              ".. deprecated:: 1.0",
              ":param city: the city", ":returns: text", ":type days: int", "@param city: the city", "@return: text",
              "Example:", "Notes\n-----", "x", ":", "-", "@", "..", "Yields:", "Attributes:",
              "  :raises ValueError: bad", "\r", "\t", "\x0b", ":returns:"]


@pytest.mark.parametrize("text", [
    GOOGLE, "One line.", "Add.\n\nArgs:\n    a: x.", "Sum.\n\n:param a: x.\n:returns: y.",
    "Sum.\n\nParameters\n----------\na : int\n    x.", "Sum.\n\n@param a: x.\n@return: y.",
    "Sum.\n\n.. deprecated:: 2.0\n    Use add.", "No sections: just text - with a dash."])
def test_the_styles_run_read_a_docstring_as_all_four_would(text: str) -> None:
    assert _same(_docstrings._best_parse(text), _every_style(text))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_FRAGMENTS) | st.text(max_size=12), max_size=14))
def test_any_text_is_read_as_all_four_styles_would(parts: list[str]) -> None:
    text = "".join(parts)
    ours, theirs = _outcome(_docstrings._best_parse, text), _outcome(_every_style, text)
    if ours[0] == theirs[0] == "read":  # else both raised the same (reST's IndexError on ': :', as before)
        assert _same(ours[1], theirs[1])
    else:
        assert ours == theirs


# -- the Google reader and cleandoc: docstring_parser's and inspect's results, in fewer steps ------------------
import inspect  # noqa: E402

_GOOGLE_FRAGMENTS = ["Get the forecast.", "\n", "\n\n", "    ", "  ", "Args:", "Arguments:", "Returns:", "Raises:",
                     "Yields:", "Example:", "Examples:", "Attributes:", "Keyword Args:", "Other Parameters:",
                     "city: the city", "days (int): how many", "units (str, optional): which", "x", ":", " : ",
                     "(", ")", "Returns: text", "int: the count", "\r", "\t", "\x0b", "\u2028", "Note:", "-",
                     "\n        (int)", "\n        more"]


def _google_reference(text: str) -> _docstrings._Reading | None:
    try:
        return _docstrings._reading(_docstrings._GOOGLE.parse(text))
    except ParseError:
        return None


@pytest.mark.parametrize("text", [
    GOOGLE, NUMPY, SPHINX, "", "One line.", "Args:", "Args:\n", "Args:\n    a", "Returns:\n    int: a count.",
    "S.\n\nArgs:\n    a (int): x.\n        more x.\n    b: y.\n\nReturns:\n    z.\n\nArgs:\n    c: again.",
    "S.\n\nArgs:\n  \n    a: x.\nExample:\n    >>> f()\nYields:\n    int: n.",
    "S.\n\nArgs:\n    a\n    (int): x.\n\nRaises:\n    ValueError: bad.\nunknown tail",
    "S.\n\nArgs:\n    a\n        (int): x.\n    b\n      c: y\n         z."])
def test_the_google_reader_reads_as_docstring_parser(text: str) -> None:
    assert _docstrings._google(text) == _google_reference(text)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_GOOGLE_FRAGMENTS) | st.text(max_size=8), max_size=24))
def test_the_google_reader_reads_any_text_as_docstring_parser(parts: list[str]) -> None:
    text = "".join(parts)
    assert _outcome(_docstrings._google, text) == _outcome(_google_reference, text)
    cleaned = inspect.cleandoc(text)
    assert _outcome(_docstrings._google, cleaned) == _outcome(_google_reference, cleaned)


def test_the_parse_cache_is_keyed_by_the_raw_docstring() -> None:
    doc = "Sum.\n\n    Args:\n        a: x.\n    "
    assert parse_docstring(doc) is parse_docstring(doc)
    assert parse_docstring(doc) == DocInfo(description="Sum.", params={"a": "x."})


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["\n", " ", "Args", "Args:", "Examples:", "Example", ":", " :", "\r", "\x0c", "\t",
                                 "Returns:  ", "Keyword Args:", "x", "Other Params:\n"]) | st.text(max_size=4),
                max_size=16))
def test_section_titles_are_found_as_the_parsers_pattern_finds_them(parts: list[str]) -> None:
    text = "".join(parts)
    assert _docstrings._titles(text) == [(m.start(), m.group(1), m.end()) for m in _docstrings._TITLES.finditer(text)]


def _docinfo_by_docstring_parser(doc: str) -> DocInfo:
    """What parse_docstring gave when it ran docstring_parser's four styles on inspect.cleandoc(doc)."""
    if not doc.strip():
        return DocInfo()
    text = inspect.cleandoc(doc)
    best = _every_style(text)
    if best is None:
        return DocInfo(description=text.strip())
    parts = [p for p in (best.short_description, best.long_description) if p]
    returns = best.returns.description if best.returns and best.returns.description else None
    return DocInfo(description="\n\n".join(parts).strip(),
                   params={p.arg_name: " ".join(p.description.split()) for p in best.params if p.description},
                   returns=returns)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_FRAGMENTS + _GOOGLE_FRAGMENTS + ["\n    ", "\n        ", "\n  \n"])
                | st.text(max_size=8), max_size=24))
def test_parse_docstring_reads_any_docstring_as_docstring_parser(parts: list[str]) -> None:
    doc = "".join(parts)
    assert _outcome(parse_docstring.__wrapped__, doc) == _outcome(_docinfo_by_docstring_parser, doc)


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, SPHINX, "\n    Summary.\n\n    Args:\n        a: x.\n    ",
                                 "\n\nS.\n  Args:\n    a: x.\n b", "\tS.\n\tArgs:\n\t    a: x.", ": : ",
                                 "\n\n  S.\n    Args:\n      a: x."])  # cleandoc twice reads Args only here
def test_parse_docstring_reads_these_as_docstring_parser(doc: str) -> None:
    assert _outcome(parse_docstring.__wrapped__, doc) == _outcome(_docinfo_by_docstring_parser, doc)
