"""The adapter half of the Python env bridge: a gym-like env (RAGEN BaseEnv or Gymnasium) seen through ragen-ts's
Env contract (text actions and observations, scalar info, terminated vs truncated), and the EnvSpec that describes it.
"""

import inspect
import math

from ragen_env_png import to_wire

# RAGEN's snake_case info keys -> ragen-ts's names.
_INFO_KEYS = {"action_is_valid": "actionIsValid", "action_is_effective": "actionIsEffective"}


class ProtocolError(Exception):
    """A client mistake answered with a typed error; the session goes on unless the code is closing."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class EnvAdapter:
    """One Python env seen through the ragen-ts Env contract: text actions, text observations, scalar info.

    Discrete RAGEN envs (``env.config.action_lookup`` = {id: name}, or ``get_all_actions()``) take action
    names; a name that matches none (case-insensitively) is invalid and not sent to the env, as in RAGEN's
    manager. Gymnasium envs are recognised by their 5-tuple ``step`` and ``(obs, info)`` ``reset``.
    ``observation_to_images(obs, env)`` gives each observation's images (see ragen_env_png.rgb_of for the forms); an
    invalid action repeats the last ones, as it repeats the text.
    """

    def __init__(self, env, action_names=None, observation_to_text=None, observation_to_images=None):
        self.env = env
        self._fixed_names = list(action_names) if action_names else None
        self._to_text = observation_to_text or (lambda obs: obs if isinstance(obs, str) else str(obs))
        self._to_images = observation_to_images
        self.last_text = ""
        self.last_images = []  # wire images (ragen_env_png.to_wire) of the last observation
        self.running = False

    def action_lookup(self):
        """{name: action} for discrete envs, else None (free-text actions)."""
        if self._fixed_names:
            return {n: n for n in self._fixed_names}
        cfg = getattr(self.env, "config", None)
        lookup = getattr(cfg, "action_lookup", None) if cfg is not None else None
        if isinstance(lookup, dict) and lookup:
            return {str(name): key for key, name in lookup.items()}
        return None

    def action_names(self):
        lookup = self.action_lookup()
        return list(lookup.keys()) if lookup else None

    def reset(self, seed, mode, options):
        params = inspect.signature(self.env.reset).parameters
        kwargs = {"seed": seed}
        if "mode" in params or _takes_kwargs(params):
            kwargs["mode"] = mode
        if options:
            if "options" not in params and not _takes_kwargs(params):
                raise ProtocolError(
                    "VALIDATION_ERROR", "this env takes no reset options; send reset without data.options"
                )
            kwargs["options"] = options
        result = self.env.reset(**kwargs)
        info = {}
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
            result, info = result
        self.running = True
        return self._observe(result), _info(info, valid_default=True)

    def step(self, text):
        if not self.running:
            raise ProtocolError("RESET_NEEDED", "Cannot step before reset or after the episode ended: send a reset.")
        lookup = self.action_lookup()
        action = text
        if lookup is not None:
            match = [a for n, a in lookup.items() if n.lower() == text.strip().lower()]
            if not match:
                info = {
                    "success": False,
                    "actionIsValid": False,
                    "actionIsEffective": False,
                    "reason": "{!r} is not an action; use one of {}".format(text[:40], ", ".join(lookup)),
                }
                return self.last_text, 0.0, False, False, info
            action = match[0]
        result = self.env.step(action)
        if len(result) == 5:  # Gymnasium
            obs, reward, terminated, truncated, info = result
        elif len(result) == 4:  # RAGEN BaseEnv / old gym
            obs, reward, done, info = result
            info = dict(info or {})
            truncated = bool(info.pop("truncated", False)) and bool(done)
            terminated = bool(done) and not truncated
        else:
            raise TypeError("step() returned %d values; expected 4 (RAGEN/gym) or 5 (Gymnasium)" % len(result))
        reward = float(reward)
        if not math.isfinite(reward):
            raise ValueError(f"step() returned a non-finite reward {reward!r}")
        if terminated or truncated:
            self.running = False
        return self._observe(obs), reward, bool(terminated), bool(truncated), _info(info, valid_default=True)

    def render(self):
        render = getattr(self.env, "render", None)
        if render is None:
            return self.last_text
        try:
            out = render()
        except TypeError:
            out = render(mode="text")
        return out if isinstance(out, str) else self.last_text

    def _observe(self, obs):
        # RAGEN's manager reads the observation with render(); a reset that returns nothing falls back to it.
        text = self._to_text(obs) if obs is not None else self.render()
        self.last_text = text
        if self._to_images is not None:
            self.last_images = [to_wire(image) for image in self._to_images(obs, self.env) or []]
        return text

    def close(self):
        close = getattr(self.env, "close", None)
        if close is not None:
            close()


def _takes_kwargs(params):
    return any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params.values())


def _info(raw, valid_default):
    """Scalar info with ragen-ts's three flags; RAGEN's snake_case keys renamed, non-scalars dropped."""
    out = {"success": False, "actionIsValid": valid_default, "actionIsEffective": valid_default}
    for key, value in (raw or {}).items():
        key = _INFO_KEYS.get(key, key)
        if isinstance(value, bool) or isinstance(value, str):
            out[key] = value
        elif isinstance(value, (int, float)) and math.isfinite(value):
            out[key] = bool(value) if key in ("success", "actionIsValid", "actionIsEffective") else value
        elif hasattr(value, "item"):  # numpy scalars
            out[key] = value.item()
    return out


class EnvSpec:
    """What the bridge serves under one id: a factory ``make(**config)`` and the metadata ragen-ts reads."""

    def __init__(
        self,
        make,
        description="",
        instruction="",
        legend="",
        max_actions_per_episode=20,
        config=None,
        action_names=None,
        observation_to_text=None,
        observation_to_images=None,
        observation_space=None,
    ):
        """``observation_to_images(obs, env)``: the observation's images (a list); ``observation_space``: what they
        are, as ragen-ts's ObservationSpace ``{"text": bool, "image": {"width": w, "height": h}}`` (None: text only),
        or a function of the env's config giving it (when the config sets the image size).
        """
        if (observation_to_images is None) != (observation_space is None):
            raise ValueError(
                "EnvSpec: give observation_to_images and observation_space together "
                "(the space tells clients the image size before the first reset)"
            )
        self.make = make
        self.description = description
        self.instruction = instruction
        self.legend = legend
        self.max_actions_per_episode = max_actions_per_episode
        self.config = dict(config or {})
        self.action_names = action_names
        self.observation_to_text = observation_to_text
        self.observation_to_images = observation_to_images
        self.observation_space = observation_space

    def space(self, config):
        """The observation space under ``config`` (None: text only)."""
        space = self.observation_space
        return space(config) if callable(space) else space

    def adapter(self, config):
        """A new env from ``config`` behind its adapter."""
        return EnvAdapter(self.make(**config), self.action_names, self.observation_to_text, self.observation_to_images)
