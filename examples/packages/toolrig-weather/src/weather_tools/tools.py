"""Today's weather, from the one host the manifest declares."""

from __future__ import annotations

import os

import httpx

from toolrig import tool


@tool(permission="readonly")
def get_weather(city: str) -> str:
    """Today's weather for a city.

    Args:
        city: the city's name.
    """
    key = os.environ["WEATHER_API_KEY"]
    response = httpx.get(f"https://api.weather.example/v1/today/{city}", headers={"X-Key": key}, timeout=10)
    response.raise_for_status()
    return response.text
