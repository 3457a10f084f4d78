"""The clock of the activation animation: play, pause, step, scrub, speed.

It only counts frames; the view draws whatever frame it is told. A frame is a
fraction of an activation step (`frames_per_step` of them per step), so
"step" jumps to the next whole step and the slider scrubs through every frame.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

FPS = 30
FRAMES_PER_STEP = 24


class ActivationPlayer(QObject):
    frame_changed = Signal(int)
    playing_changed = Signal(bool)
    finished = Signal()

    def __init__(
        self, parent: QObject | None = None, fps: int = FPS, frames_per_step: int = FRAMES_PER_STEP
    ) -> None:
        super().__init__(parent)
        self.frames_per_step = frames_per_step
        self._frame_count = 1
        self._frame = 0
        self._position = 0.0  # fractional frame: speeds below 1 advance less than a frame
        self._speed = 1.0
        self.loop = False
        self._timer = QTimer(self)
        self._timer.setInterval(max(1, round(1000 / fps)))
        self._timer.timeout.connect(self._tick)

    # -- state ----------------------------------------------------------------

    @property
    def frame(self) -> int:
        return self._frame

    @property
    def frame_count(self) -> int:
        return self._frame_count

    @property
    def last_frame(self) -> int:
        return self._frame_count - 1

    @property
    def playing(self) -> bool:
        return self._timer.isActive()

    @property
    def speed(self) -> float:
        return self._speed

    def set_speed(self, speed: float) -> None:
        self._speed = max(0.05, float(speed))

    def set_frame_count(self, count: int) -> None:
        """A new animation: back to the first frame, stopped."""
        self.pause()
        self._frame_count = max(1, int(count))
        self.seek(0)

    # -- controls ----------------------------------------------------------------

    def play(self) -> None:
        if self._frame >= self.last_frame and not self.loop:
            self.seek(0)
        if not self._timer.isActive() and self._frame_count > 1:
            self._timer.start()
            self.playing_changed.emit(True)

    def pause(self) -> None:
        if self._timer.isActive():
            self._timer.stop()
            self.playing_changed.emit(False)

    def toggle(self) -> None:
        self.pause() if self.playing else self.play()

    def step(self) -> None:
        """To the next whole activation step (pauses)."""
        self.pause()
        target = (self._frame // self.frames_per_step + 1) * self.frames_per_step
        self.seek(min(target, self.last_frame))

    def step_back(self) -> None:
        self.pause()
        current = self._frame // self.frames_per_step
        target = current - 1 if self._frame % self.frames_per_step == 0 else current
        self.seek(max(target, 0) * self.frames_per_step)

    def seek(self, frame: int) -> None:
        frame = min(max(int(frame), 0), self.last_frame)
        self._position = float(frame)
        if frame != self._frame:
            self._frame = frame
        self.frame_changed.emit(frame)

    def advance(self, frames: float | None = None) -> None:
        """One tick's worth of frames (the timer calls this; benchmarks call it directly)."""
        self._position += self._speed if frames is None else frames
        if self._position >= self.last_frame:
            if self.loop:
                self._position %= max(self.last_frame, 1)
            else:
                self._position = float(self.last_frame)
        frame = int(self._position)
        if frame != self._frame:
            self._frame = frame
            self.frame_changed.emit(frame)

    def _tick(self) -> None:
        self.advance()
        if not self.loop and self._frame >= self.last_frame:
            self.pause()
            self.finished.emit()
