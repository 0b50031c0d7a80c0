from __future__ import annotations

import toolrig
import toolrig.providers as providers


def test_all_lists_exactly_the_public_names() -> None:
    public = {name for name in vars(providers) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(providers, name)) is type(providers)}
    assert set(providers.__all__) == public - modules - {"annotations"}
    assert providers.__all__ == sorted(providers.__all__, key=lambda n: (not n.isupper(), n))


def test_served_lazily_from_the_package() -> None:
    assert toolrig.providers is providers
    for name in ("to_openai", "to_anthropic", "to_gemini", "to_gemini_tool", "to_mcp", "from_openai",
                 "from_anthropic", "from_gemini", "to_openai_result", "to_anthropic_result", "to_gemini_result",
                 "check", "check_all"):
        assert callable(getattr(providers, name))


def test_core_never_imports_the_mcp_package() -> None:
    import subprocess
    import sys

    code = ("import sys, toolrig.providers as p; from toolrig import tool\n"
            "@tool\ndef f(x: int) -> int:\n    '''F.'''\n    return x\n"
            "p.to_mcp([f]); p.check_all([f])\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'openai', 'anthropic', 'google'))\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == ""
