"""Example tools for a weather assistant (a demo: all data is fake and deterministic, no network).

Load it from the command line::

    uv run toolrig list examples/weather_tools.py
    uv run toolrig describe get_forecast --from examples/weather_tools.py --format openai
    uv run toolrig check --from examples/weather_tools.py

The module shows each way to define a tool: ``@tool`` bare and with options, an async tool,
a pydantic model parameter, an ``Injected`` parameter, and a ``Tool`` subclass. ``TOOLS``
lists them all for code that wants the module's tools in one place.
"""

from __future__ import annotations

import hashlib
from datetime import date, timedelta
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from toolrig import BaseTool, Injected, Tool, tool

__all__ = [
    "DEFAULT_PREFS",
    "TOOLS",
    "Alert",
    "ClearAlerts",
    "Forecast",
    "Location",
    "UserPrefs",
    "convert_temperature",
    "get_forecast",
    "get_weather",
    "subscribe_alerts",
]

Unit = Literal["celsius", "fahrenheit"]
_CONDITIONS = ("sunny", "cloudy", "rain", "snow", "windy", "fog")


def _fake_reading(place: str, day: int = 0) -> tuple[float, str]:
    """A deterministic fake temperature (°C) and condition for a place and day offset."""
    digest = hashlib.sha256(f"{place.strip().lower()}|{day}".encode()).digest()
    celsius = round(-5 + digest[0] / 255 * 35, 1)
    return celsius, _CONDITIONS[digest[1] % len(_CONDITIONS)]


def _in_unit(celsius: float, unit: Unit) -> float:
    return celsius if unit == "celsius" else round(celsius * 9 / 5 + 32, 1)


class Location(BaseModel):
    """A place on Earth, by city name and optional country code."""

    city: str = Field(min_length=1, description="City name, e.g. 'Lisbon'.")
    country: str | None = Field(default=None, pattern=r"^[A-Z]{2}$", description="ISO 3166 alpha-2 code.")


class Forecast(BaseModel):
    """One day of a forecast."""

    day: date
    condition: str
    temperature: float
    unit: Unit


class UserPrefs(BaseModel):
    """Per-user settings the host application supplies at call time (never seen by the model)."""

    unit: Unit = "celsius"


DEFAULT_PREFS = UserPrefs()
"""Used when the host injects no preferences."""


class Alert(BaseModel):
    """A weather-alert subscription."""

    city: str
    condition: str
    subscribed: bool


@tool(permission="readonly", tags=["weather"], version="1.2.0", cacheable=True, cache_ttl=300)
def get_weather(city: str, unit: Unit = "celsius") -> str:
    """Get the current weather for a city (fake demo data).

    Args:
        city: City name, e.g. "Paris".
        unit: Temperature unit for the answer.
    """
    celsius, condition = _fake_reading(city)
    symbol = "°C" if unit == "celsius" else "°F"
    return f"{city}: {condition}, {_in_unit(celsius, unit)}{symbol}"


@tool(permission="readonly", tags=["weather", "forecast"], timeout=10)
async def get_forecast(
    location: Location,
    days: Annotated[int, Field(ge=1, le=7)] = 3,
    prefs: Injected[UserPrefs] = DEFAULT_PREFS,
) -> list[Forecast]:
    """Get a daily forecast for a location (fake demo data).

    The temperature unit comes from the user's preferences, which the host injects.

    Args:
        location: Where to forecast.
        days: Number of days, 1 to 7.
        prefs: The caller's preferences (injected, hidden from the model).
    """
    start = date(2025, 1, 1)
    out = []
    for offset in range(days):
        celsius, condition = _fake_reading(location.city, offset)
        out.append(Forecast(day=start + timedelta(days=offset), condition=condition,
                            temperature=_in_unit(celsius, prefs.unit), unit=prefs.unit))
    return out


@tool
def convert_temperature(value: float, to: Unit) -> float:
    """Convert a temperature between Celsius and Fahrenheit.

    Args:
        value: The temperature in the other unit.
        to: The unit to convert to.
    """
    return round(value * 9 / 5 + 32, 2) if to == "fahrenheit" else round((value - 32) * 5 / 9, 2)


_SUBSCRIPTIONS: dict[str, set[str]] = {}
"""In-memory store for the demo's alert subscriptions (city -> conditions)."""


@tool(permission="write", tags=["weather", "alerts"], requires_approval=False)
def subscribe_alerts(city: str, condition: Literal["rain", "snow", "windy", "fog"]) -> Alert:
    """Subscribe to alerts when a condition is forecast for a city (stored in memory only).

    Args:
        city: City to watch.
        condition: The condition to alert on.
    """
    _SUBSCRIPTIONS.setdefault(city.lower(), set()).add(condition)
    return Alert(city=city, condition=condition, subscribed=True)


class ClearAlerts(Tool):
    """Remove every alert subscription for a city.

    Destructive: the subscriptions are gone for good, so a host should ask a human first.
    """

    permission = "destructive"
    requires_approval = True
    tags = ("weather", "alerts")
    version = "2.0.0"

    def run(self, city: str) -> int:
        """Remove the subscriptions.

        Args:
            city: City whose subscriptions to remove.

        Returns:
            How many subscriptions were removed.
        """
        return len(_SUBSCRIPTIONS.pop(city.lower(), set()))


TOOLS: list[BaseTool] = [get_weather, get_forecast, convert_temperature, subscribe_alerts, ClearAlerts()]
"""Every tool of this module, ready for a registry or a provider export."""
