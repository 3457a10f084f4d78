"""Settings: the data folder, the language model, the embedding model, and the
bank's profile and retain/recall parameters, each shown beside its default."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.panes.base import Pane, muted_label
from app.panes.settings_params import SettingDelegate, shown
from app.state import StudioState
from core import (
    CONFIG_DEFAULTS,
    CONFIG_SPEC,
    ENGINE_SPEC,
    Kind,
    LlmSettings,
    open_model,
)

if TYPE_CHECKING:
    from core import (
        Bank,
        BankProfile,
        Change,
    )


class SettingsPane(Pane):
    title = "Settings"
    slug = "settings"

    def __init__(self, state: StudioState, parent: QWidget | None = None) -> None:
        super().__init__(state, parent)
        self.defaults = dict(CONFIG_DEFAULTS)
        self.profile: BankProfile | None = None

        # -- data folder --
        self.home = QLineEdit(str(state.engine.home))
        self.home.setObjectName("data-folder")
        self.home.setReadOnly(True)
        open_folder = QPushButton("Open folder")
        open_folder.clicked.connect(
            lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(state.engine.home)))
        )
        row = QHBoxLayout()
        row.addWidget(self.home, 1)
        row.addWidget(open_folder)
        data_box = QGroupBox("Data folder")
        dv = QVBoxLayout(data_box)
        dv.addLayout(row)
        dv.addWidget(
            muted_label("Each bank is one folder here. Set ENGRAM_HOME to use another folder.")
        )

        # -- language model --
        self.llm_provider = QComboBox()
        self.llm_provider.setObjectName("llm-provider")
        self.llm_provider.addItem("Ollama", "ollama")
        self.llm_provider.addItem("OpenAI-compatible (llama-server, LM Studio, vLLM)", "openai")
        self.llm_provider.setToolTip(ENGINE_SPEC["llm_provider"].help)
        self.llm_host = QLineEdit("http://127.0.0.1:11434")
        self.llm_host.setObjectName("llm-host")
        self.llm_model = QComboBox()
        self.llm_model.setObjectName("llm-model")
        self.llm_model.setEditable(True)
        self.llm_model.setPlaceholderText("e.g. qwen2.5:3b")
        self.list_models = QPushButton("List models")
        self.list_models.clicked.connect(self._list_models)
        self.llm_timeout = QDoubleSpinBox()
        self.llm_timeout.setObjectName("llm-timeout")
        timeout = ENGINE_SPEC["ollama_timeout"]
        self.llm_timeout.setRange(1, timeout.maximum or 3600)
        self.llm_timeout.setDecimals(0)
        self.llm_timeout.setSuffix(" s")
        self.llm_timeout.setToolTip(
            f"{timeout.help} Raise this for a large model that reads a long prompt "
            "slowly. ENGRAM_OLLAMA_TIMEOUT overrides it."
        )
        self.test_button = QPushButton("Test connection")
        self.test_button.clicked.connect(self._test)
        self.llm_save = QPushButton("Use this model")
        self.llm_save.clicked.connect(self._save_llm)
        self.llm_result = QLabel()
        self.llm_result.setObjectName("llm-result")
        self.llm_result.setWordWrap(True)
        llm_box = QGroupBox("Language model")
        lf = QFormLayout(llm_box)
        lf.addRow("Server", self.llm_provider)
        lf.addRow("Host", self.llm_host)
        mrow = QHBoxLayout()
        mrow.addWidget(self.llm_model, 1)
        mrow.addWidget(self.list_models)
        lf.addRow("Model", mrow)
        trow = QHBoxLayout()
        trow.addWidget(self.llm_timeout)
        trow.addWidget(muted_label("of silence before a call fails"), 1)
        lf.addRow("Timeout", trow)
        brow = QHBoxLayout()
        brow.addWidget(self.test_button)
        brow.addWidget(self.llm_save)
        brow.addStretch(1)
        lf.addRow("", brow)
        lf.addRow("", self.llm_result)
        self._init_llm()

        # -- embedding --
        model, dim = state.engine.embedding_spec
        self.embedding = QLabel(f"{model} · {dim} dimensions · shipped with Engram Studio")
        self.embedding.setObjectName("embedding-model")
        self.embedding.setWordWrap(True)
        emb_box = QGroupBox("Embedding model")
        ev = QVBoxLayout(emb_box)
        ev.addWidget(self.embedding)
        ev.addWidget(
            muted_label(
                "A bank records the model it was embedded with and refuses another one. "
                "The model runs locally; nothing is downloaded."
            )
        )

        # -- bank profile --
        self.agent_name = QLineEdit()
        self.agent_name.setPlaceholderText("the speaker who is “I” in conversations")
        self.background = QPlainTextEdit()
        self.background.setFixedHeight(84)
        self.profile_save = QPushButton("Save profile")
        self.profile_save.clicked.connect(self._save_profile)
        self.profile_box = QGroupBox("Bank profile")
        pf = QFormLayout(self.profile_box)
        pf.addRow("Agent", self.agent_name)
        pf.addRow("Background", self.background)
        prow = QHBoxLayout()
        prow.addStretch(1)
        prow.addWidget(self.profile_save)
        pf.addRow("", prow)

        # -- parameters --
        self.params = QTableWidget(len(self.defaults), 3)
        self.params.setObjectName("parameters")
        self.params.setHorizontalHeaderLabels(["Parameter", "Default", "This bank"])
        self.params.verticalHeader().setVisible(False)
        self.params.setAlternatingRowColors(True)
        self.params.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.params.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked
            | QAbstractItemView.EditTrigger.EditKeyPressed
            | QAbstractItemView.EditTrigger.AnyKeyPressed
        )
        header = self.params.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        # Wide enough for a spin box editor with its arrows, not only the value.
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Fixed)
        header.resizeSection(2, 120)
        for row_, (key, default) in enumerate(self.defaults.items()):
            name = QTableWidgetItem(key)
            name.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
            name.setToolTip(CONFIG_SPEC[key].describe())
            dflt = QTableWidgetItem()
            dflt.setData(Qt.ItemDataRole.DisplayRole, default)
            dflt.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
            value = QTableWidgetItem()
            value.setData(Qt.ItemDataRole.EditRole, default)
            self.params.setItem(row_, 0, name)
            self.params.setItem(row_, 1, dflt)
            self.params.setItem(row_, 2, value)
        self.delegate = SettingDelegate(self.params)
        self.delegate.refused.connect(self._refused)
        self.params.setItemDelegate(self.delegate)
        rows_height = self.params.verticalHeader().length() + header.height() + 4
        self.params.setMinimumHeight(min(rows_height, 520))
        self.params.itemChanged.connect(self._param_edited)
        self.params.currentCellChanged.connect(lambda row, *_: self._show_help(row))
        # The chosen key's help, type, range and default (the spec's words).
        self.param_help = QLabel()
        self.param_help.setObjectName("parameter-help")
        self.param_help.setWordWrap(True)
        self.param_help.setMinimumHeight(48)
        self.param_help.setTextFormat(Qt.TextFormat.RichText)
        self.params_reset = QPushButton("Reset to defaults")
        self.params_reset.clicked.connect(self._reset_params)
        self.params_save = QPushButton("Save parameters")
        self.params_save.setProperty("primary", True)
        self.params_save.clicked.connect(self._save_params)
        self.params_box = QGroupBox("Retain and recall parameters")
        pv = QVBoxLayout(self.params_box)
        pv.addWidget(
            muted_label("Double-click a value to change it for this bank; changed values are bold.")
        )
        pv.addWidget(self.params)
        pv.addWidget(self.param_help)
        prow = QHBoxLayout()
        prow.addStretch(1)
        prow.addWidget(self.params_reset)
        prow.addWidget(self.params_save)
        pv.addLayout(prow)

        self.no_bank = muted_label("Open a bank to see its profile and parameters.")

        columns = QHBoxLayout()
        left = QVBoxLayout()
        left.addWidget(data_box)
        left.addWidget(llm_box)
        left.addWidget(emb_box)
        if state.server is not None:
            from app.serving import ServingSettings

            self.serving = ServingSettings(state.server)
            left.addWidget(self.serving)
        left.addWidget(self.profile_box)
        left.addWidget(self.no_bank)
        left.addStretch(1)
        right = QVBoxLayout()
        right.addWidget(self.params_box)
        right.addStretch(1)
        columns.addLayout(left, 1)
        columns.addLayout(right, 1)
        body = QWidget()
        body.setLayout(columns)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(body)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(scroll)
        self.set_bank(state.bank)

    # -- Pane interface ------------------------------------------------------

    def set_bank(self, bank: Bank | None) -> None:
        self.profile = None
        has = bank is not None
        self.profile_box.setVisible(has)
        self.params_box.setVisible(has)
        self.no_bank.setVisible(not has)
        if bank is not None:
            self._load_profile(bank)

    def apply_change(self, change: Change, initiator: object = None) -> None:
        bank = self.bank
        if bank is not None and change.touches(Kind.PROFILE):
            self._load_profile(bank)

    def refresh(self) -> None:
        if self.bank is not None:
            self._load_profile(self.bank)

    # -- profile and parameters ----------------------------------------------

    def _load_profile(self, bank: Bank) -> None:
        self.state.runner.run_query(bank.profile, lambda p: self._show_profile(bank, p), key=bank)

    def _show_profile(self, bank: Bank, profile: BankProfile) -> None:
        if bank is not self.bank:
            return
        self.profile = profile
        self.agent_name.setText(profile.agent_name)
        self.background.setPlainText(profile.background)
        self.params.blockSignals(True)
        for row in range(self.params.rowCount()):
            key = self.params.item(row, 0).text()
            self.params.item(row, 2).setData(Qt.ItemDataRole.EditRole, profile.config.get(key))
            self._mark(row)
        self.params.blockSignals(False)

    def param_values(self) -> dict[str, Any]:
        out = {}
        for row in range(self.params.rowCount()):
            key = self.params.item(row, 0).text()
            out[key] = self.params.item(row, 2).data(Qt.ItemDataRole.EditRole)
        return out

    def _param_edited(self, item: QTableWidgetItem) -> None:
        if item.column() == 2:
            self.params.blockSignals(True)
            self._mark(item.row())
            self.params.blockSignals(False)

    def _mark(self, row: int) -> None:
        key = self.params.item(row, 0).text()
        item = self.params.item(row, 2)
        changed = item.data(Qt.ItemDataRole.EditRole) != self.defaults[key]
        font = QFont(item.font())
        font.setBold(changed)
        item.setFont(font)
        item.setToolTip(f"default: {self.defaults[key]}" if changed else "the default")

    def _show_help(self, row: int) -> None:
        if not 0 <= row < self.params.rowCount():
            self.param_help.clear()
            return
        setting = CONFIG_SPEC[self.params.item(row, 0).text()]
        limits = f" · {setting.range_text}" if setting.range_text else ""
        self.param_help.setProperty("role", "")
        self.param_help.setText(
            f"<b>{setting.key}</b> — {html.escape(setting.help)}<br>"
            f"<span style='color:gray'>{setting.type_name}{limits} · "
            f"default {html.escape(shown(setting.default) or 'empty')}</span>"
        )

    def _refused(self, message: str) -> None:
        self.param_help.setText(f"<span style='color:#dc2626'>✗ {html.escape(message)}</span>")
        self.state.status.emit(message)

    def _reset_params(self) -> None:
        self.params.blockSignals(True)
        for row in range(self.params.rowCount()):
            key = self.params.item(row, 0).text()
            self.params.item(row, 2).setData(Qt.ItemDataRole.EditRole, self.defaults[key])
            self._mark(row)
        self.params.blockSignals(False)

    def _save_params(self) -> None:
        bank = self.bank
        if bank is None:
            return
        current = dict(self.profile.config) if self.profile else {}
        changed = {k: v for k, v in self.param_values().items() if current.get(k) != v}
        if not changed:
            self.state.status.emit("No parameter changed.")
            return
        self.state.runner.run_op(
            lambda: bank.set_profile(config=changed),
            lambda _: self.state.status.emit(f"Saved {len(changed)} parameter(s)."),
            key=bank,
        )

    def _save_profile(self) -> None:
        bank = self.bank
        if bank is None:
            return
        agent, background = self.agent_name.text().strip(), self.background.toPlainText().strip()
        self.state.runner.run_op(
            lambda: bank.set_profile(agent_name=agent, background=background),
            lambda _: self.state.status.emit("Saved the bank profile."),
            key=bank,
        )

    # -- language model ------------------------------------------------------

    def _init_llm(self) -> None:
        settings = self.state.engine.settings
        self.llm_provider.setCurrentIndex(max(0, self.llm_provider.findData(settings.llm_provider)))
        self.llm_host.setText(settings.ollama_host)
        self.llm_model.setEditText(settings.ollama_model)
        self.llm_timeout.setValue(settings.ollama_timeout)

    def _list_models(self) -> None:
        host, provider = self.llm_host.text().strip(), self.llm_provider.currentData()
        self.state.runner.run_query(
            lambda: list_llm_models(host, provider),
            self._show_models,
            lambda error: self._llm_outcome(False, str(error)),
        )

    def _show_models(self, models: list[str]) -> None:
        current = self.llm_model.currentText()
        self.llm_model.clear()
        self.llm_model.addItems(models)
        self.llm_model.setEditText(current or (models[0] if models else ""))
        self._llm_outcome(bool(models), f"{len(models)} model(s) installed on the server.")

    def _test(self) -> None:
        host, model = self.llm_host.text().strip(), self.llm_model.currentText().strip()
        provider = self.llm_provider.currentData()
        self.llm_result.setProperty("role", "muted")
        self.llm_result.setText("Testing…")
        self.state.runner.run_query(
            lambda: check_llm(host, model, provider),
            lambda outcome: self._llm_outcome(*outcome),
            lambda error: self._llm_outcome(False, str(error)),
        )

    def _save_llm(self) -> None:
        engine = self.state.engine
        host, model = self.llm_host.text().strip(), self.llm_model.currentText().strip()
        timeout = float(self.llm_timeout.value())
        provider = self.llm_provider.currentData()

        def save() -> str:
            engine.set_settings(
                engine.settings.with_values(
                    ollama_host=host,
                    ollama_model=model,
                    ollama_timeout=timeout,
                    llm_provider=provider,
                )
            )
            return engine.mode()

        self.state.runner.run_query(save, self._saved_llm)

    def _saved_llm(self, mode: str) -> None:
        self.state.set_mode(mode)
        self.state.status.emit(f"Language model saved. Mode: {mode}.")

    def _llm_outcome(self, ok: bool, message: str) -> None:
        self.llm_result.setProperty("role", "ok" if ok else "error")
        self.llm_result.setText(("✓ " if ok else "✗ ") + message)
        self.llm_result.style().unpolish(self.llm_result)
        self.llm_result.style().polish(self.llm_result)


# The pane tests the host and model typed in, before they are saved, so it
# builds its own LanguageModel rather than asking the engine for the saved one.


def check_llm(host: str, model: str, provider: str = "ollama") -> tuple[bool, str]:
    """(ok, a sentence for a person): does `model` answer at `host`? Never raises.
    The sentence says what the server reports the model supports (its context,
    capabilities, size and quantisation) when it does."""
    try:
        lm = open_model(LlmSettings(host=host, model=model, provider=provider))
    except Exception as error:  # noqa: BLE001 - the pane shows why, whatever it is
        return False, str(error)
    with lm:
        status = lm.probe()
    return status.ready, status.message


def list_llm_models(host: str, provider: str = "ollama") -> list[str]:
    """The models installed on the server; raises LanguageModelError with the reason."""
    with open_model(LlmSettings(host=host, model="", provider=provider)) as lm:
        return lm.models()
