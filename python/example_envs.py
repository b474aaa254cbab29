"""Small Python envs for the bridge's tests and docs: one in RAGEN's BaseEnv style, one in Gymnasium's, and the
first again with an image of its corridor beside the text.

python3 python/ragen_env_bridge.py --env python/example_envs.py:ENVS --port 8766
"""

import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ragen_env_bridge import EnvSpec  # noqa: E402


class _Config:
    def __init__(self, length):
        self.length = length
        # RAGEN's discrete-action convention: id -> name; the bridge maps the model's names to ids.
        self.action_lookup = {1: "Left", 2: "Right"}


class PyCorridor:
    """RAGEN BaseEnv style: reset(seed, mode) -> rendered obs; step(int) -> (obs, reward, done, info).

    A corridor of `length` cells; the player starts at a seeded cell left of the goal `G` at the right
    end. Right moves toward it. Reward -0.1 per move, +1 on reaching the goal (done, success).
    """

    def __init__(self, length=6):
        self.config = _Config(length)
        self.pos = 0
        self.done = False

    def reset(self, seed=None, mode="train"):
        rng = random.Random(seed if mode == "train" else 10_000 + (seed or 0))
        self.pos = rng.randrange(0, self.config.length - 1)
        self.done = False
        return self.render()

    def step(self, action):
        before = self.pos
        self.pos = max(0, self.pos - 1) if action == 1 else min(self.config.length - 1, self.pos + 1)
        self.done = self.pos == self.config.length - 1
        reward = -0.1 + (1.0 if self.done else 0.0)
        info = {
            "success": self.done,
            "action_is_valid": True,
            "action_is_effective": self.pos != before,
            "position": self.pos,
        }
        return self.render(), reward, self.done, info

    def render(self, mode="text"):
        return "".join(
            "P" if i == self.pos else ("G" if i == self.config.length - 1 else "_") for i in range(self.config.length)
        )

    def close(self):
        pass


class PySum:
    """Gymnasium style: reset(seed=, options=) -> (obs, info); step(str) -> (obs, reward, terminated, truncated, info).

    Answer the sum of two seeded numbers. Right: reward 1, terminated. Wrong: reward 0 and another try;
    the third wrong answer truncates. A non-number is invalid (the state is unchanged). "raise" raises;
    "sleep" takes a second.
    """

    def __init__(self, high=50):
        self.high = high
        self.a = self.b = 0
        self.tries = 0

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.a, self.b = rng.randint(0, self.high), rng.randint(0, self.high)
        self.tries = 0
        return self._question(), {"high": self.high}

    def step(self, action):
        text = action.strip()
        if text == "raise":
            raise ValueError("asked to raise")
        if text == "sleep":  # a slow env, for the bridge's --step-timeout
            time.sleep(1.0)
        if not text.lstrip("-").isdigit() or len(text) > 12:
            return (
                self._question() + " (not a number)",
                0.0,
                False,
                False,
                {"action_is_valid": False, "action_is_effective": False, "reason": "not a number"},
            )
        self.tries += 1
        right = int(text) == self.a + self.b
        return (
            self._question(),
            1.0 if right else 0.0,
            right,
            not right and self.tries >= 3,
            {"success": right, "tries": self.tries},
        )

    def render(self):
        return self._question()

    def _question(self):
        return "What is %d + %d?" % (self.a, self.b)


# The visual corridor's colours (RGB) and cell size in pixels.
_COLOURS = {"P": (200, 30, 30), "G": (240, 200, 0), "_": (120, 120, 120)}
CELL = 4


def corridor_image(obs, env):
    """PyCorridor's state as a (width, height, bytes) RGB image: one CELL x CELL square per cell, left to right."""
    row = b"".join(bytes(_COLOURS[c]) * CELL for c in env.render())
    return [(len(row) // 3, CELL, row * CELL)]


ENVS = {
    "PyCorridor": EnvSpec(
        PyCorridor,
        description="RAGEN-style corridor (Python)",
        instruction="Walk Right to the goal G. Actions: Left, Right.",
        legend="P player, G goal, _ floor",
        max_actions_per_episode=10,
        config={"length": 6},
    ),
    "PyCorridorImage": EnvSpec(
        PyCorridor,
        description="RAGEN-style corridor with an image of it (Python)",
        instruction="Walk Right to the goal G. Actions: Left, Right.",
        legend="P player, G goal, _ floor; in the image red player, yellow goal, grey floor",
        max_actions_per_episode=10,
        config={"length": 6},
        observation_to_images=corridor_image,
        observation_space=lambda config: {"text": True, "image": {"width": config["length"] * CELL, "height": CELL}},
    ),
    "PySum": EnvSpec(
        PySum,
        description="Gymnasium-style sum question (Python)",
        instruction="Answer the sum as a number.",
        max_actions_per_episode=3,
        config={"high": 50},
    ),
}
