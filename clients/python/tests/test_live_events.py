"""Against a live gateway: every event type its spec (``/openapi.json``) documents has a class of its
own here, not the plain ``Event`` (run ``npm run clients:types`` when this fails)."""

import json
import os
import unittest
import urllib.request

from pi_gateway.event_base import Event
from pi_gateway.events import EVENT_CLASSES, parse_event

URL = os.environ["PI_GATEWAY_URL"]


class EveryEventHasItsClass(unittest.TestCase):
    def test_the_served_spec_s_events(self) -> None:
        with urllib.request.urlopen(URL + "/openapi.json") as res:
            spec = json.load(res)
        union = spec["components"]["schemas"]["StreamEvent"]
        types = set(union["discriminator"]["mapping"])
        for member in union["oneOf"]:
            types.update(spec["components"]["schemas"][member["$ref"].split("/")[-1]]["properties"]["type"]["enum"])
        missing = sorted(t for t in types if EVENT_CLASSES.get(t, Event) is Event)
        self.assertEqual(missing, [], "run `npm run clients:types`")
        for kind in types:
            event = parse_event({"type": kind}, 1)
            self.assertIs(type(event), EVENT_CLASSES[kind])
            self.assertEqual(type(event).TYPE, kind)


if __name__ == "__main__":
    unittest.main()
