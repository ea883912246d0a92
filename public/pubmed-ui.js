/* PubMed Assistant: what the chat page does beyond Chainlit 2.12's settings (docs/ui.md
 * "The page's own script"). Loaded by .chainlit/config.toml's custom_js; no other host is reached.
 *
 * 1. The source panel opens only when the reader clicks a source marker ([1], [2] ...), and shows
 *    that source alone. Chainlit's page opens its side view by itself whenever the set of
 *    display="side" elements changes (after every answer, every reload and resume), titled with
 *    the last marker but holding every source of the conversation. The panel is drawn only when
 *    it shows the one source of the marker the reader clicked (public/pubmed-ui.css, gated by
 *    <html data-pubmed-panel="shown">); any other opening is never drawn and is closed, or the
 *    source the reader had open is shown again.
 * 2. Escape closes the panel (the phone's sheet already closes on Escape).
 * 3. Icon-only buttons get accessible names; the closed sidebar (drawn off screen) is inert,
 *    so Tab does not walk through it.
 * 4. What the server sends with ``cl.send_window_message({"pubmedAssistant": {...}})``
 *    (app/ui.py): ``modeButton``, the mode button of a reopened conversation, highlighted;
 *    ``indexSummary``, what the index holds, shown under the starter questions.
 * 5. A message with no words is not sent (Chainlit sends an empty one while a mode button is
 *    highlighted).
 */
(function () {
  'use strict';

  // The panel is drawn only while <html data-pubmed-panel="shown"> (public/pubmed-ui.css hides
  // it otherwise): a panel that appears or changes without the reader's click stays hidden from
  // its first frame, whatever time Chainlit then takes to close it. The attribute is set here,
  // in the mutation callback that sees the panel change, before the browser paints it.
  var PENDING_MS = 5000; // a click's panel must appear within this (a busy machine is slow)
  var pending = null; // the marker just clicked: {label, at, restoring: the state it undoes}
  var chosen = null; // the marker whose source the reader opened, while its panel is open:
  // {step, label, nth}, found again by findChosen (Chainlit redraws a message's markers)
  var shown = null; // the panel as last seen: null when closed

  function panel() {
    return document.getElementById('side-view-content');
  }

  function panelTitle() {
    var title = document.getElementById('side-view-title');
    return title ? title.textContent.trim() : '';
  }

  function panelState() {
    var content = panel();
    if (!content) return null;
    return panelTitle() + '\u0000' + content.childElementCount + '\u0000' +
      (content.firstElementChild ? content.firstElementChild.textContent.slice(0, 300) : '');
  }

  function setGate(value) { // 'shown', 'restoring' (kept in place, not drawn) or null (hidden)
    var root = document.documentElement;
    if (value === null) {
      if (root.hasAttribute('data-pubmed-panel')) root.removeAttribute('data-pubmed-panel');
    } else if (root.getAttribute('data-pubmed-panel') !== value) {
      root.setAttribute('data-pubmed-panel', value);
    }
  }

  function closePanel() {
    var back = document.querySelector('#side-view-title button'); // desktop: the back arrow
    if (back) {
      back.click();
      return;
    }
    var content = panel(); // phone: the sheet's own close button
    var sheet = content && content.closest('[role="dialog"]');
    var close = sheet && sheet.querySelector('button:not([id])');
    if (close) close.click();
  }

  function markerLabel(link) {
    return (link.textContent || '').trim();
  }

  function sameLabel(root, label) {
    var links = root.querySelectorAll('a.element-link');
    var out = [];
    for (var i = 0; i < links.length; i++) {
      if (markerLabel(links[i]) === label) out.push(links[i]);
    }
    return out;
  }

  function markerRef(link) { // its message (Chainlit's step-<id>), label and place there
    var step = link.closest('[id^="step-"]');
    var label = markerLabel(link);
    return {step: step ? step.id : null, label: label,
      nth: sameLabel(step || document, label).indexOf(link)};
  }

  function findChosen() {
    if (!chosen) return null;
    var step = chosen.step ? document.getElementById(chosen.step) : document;
    return step ? sameLabel(step, chosen.label)[chosen.nth] || null : null;
  }

  document.addEventListener('click', function (event) {
    var link = event.target && event.target.closest && event.target.closest('a.element-link');
    if (!link) return;
    chosen = markerRef(link);
    pending = {label: chosen.label, at: performance.now()};
  }, true);

  function asked() { // the panel now shows the one source of the reader's pending click
    if (!pending || performance.now() - pending.at > PENDING_MS) return false;
    var content = panel();
    return panelTitle() === pending.label && content.childElementCount === 1;
  }

  function guardPanel() {
    var state = panelState();
    if (state === shown) {
      if (shown !== null && pending && pending.restoring) { // back to the reader's source
        pending = null;
        setGate('shown');
      }
      return;
    }
    if (state === null) { // closed (by the reader, by this script, or a new chat)
      shown = null;
      chosen = null;
      setGate(null);
      return;
    }
    if (asked()) { // the reader's click opened it, or changed it to the clicked source
      pending = null;
      shown = state;
      setGate('shown');
      return;
    }
    // opened or refilled by Chainlit itself: not drawn; show the reader's source again (the
    // panel stays in place, blank for a moment), else close it
    if (pending && pending.restoring === state &&
        performance.now() - pending.at < PENDING_MS) return; // its click is on its way
    var again = shown !== null ? findChosen() : null;
    if (again) {
      setGate('restoring');
      again.click(); // Chainlit's own marker click: that source alone
      pending = {label: chosen.label, at: performance.now(), restoring: state};
    } else {
      shown = null;
      chosen = null;
      setGate(null);
      closePanel();
    }
  }

  document.addEventListener('keydown', function (event) {
    if (event.key !== 'Escape' || event.defaultPrevented) return;
    if (document.querySelector('[role="dialog"], [role="menu"], [role="listbox"]')) return;
    var back = document.querySelector('#side-view-title button');
    if (back) {
      back.click();
      event.preventDefault();
    }
  });

  // ---- accessible names for icon-only buttons ----------------------------------------------
  var NAMES_BY_ID = {
    'chat-submit': 'Send question',
    'stop-button': 'Stop the answer',
    'new-chat-button': 'New chat',
    'sidebar-trigger-button': 'Past chats (show or hide)',
    'search-chats-button': 'Search past chats'
  };
  var NAMES_BY_ICON = [
    ['lucide-copy', 'Copy the answer'],
    ['lucide-check', 'Copied'],
    ['lucide-thumbs-up', 'Rate as helpful'],
    ['lucide-thumbs-down', 'Rate as not helpful'],
    ['lucide-arrow-left', 'Close the source (Esc)'],
    ['lucide-ellipsis', 'Conversation options'],
    ['lucide-arrow-down', 'Scroll to the newest message'],
    ['lucide-x', 'Close']
  ];

  function hasName(button) {
    return !!((button.getAttribute('aria-label') || '').trim() ||
      (button.getAttribute('aria-labelledby') || '').trim() ||
      (button.textContent || '').trim() || (button.getAttribute('title') || '').trim());
  }

  function nameOf(button) {
    if (NAMES_BY_ID[button.id]) return NAMES_BY_ID[button.id];
    var icon = button.querySelector('svg');
    var cls = icon ? (icon.getAttribute('class') || '') : '';
    for (var i = 0; i < NAMES_BY_ICON.length; i++) {
      if (cls.indexOf(NAMES_BY_ICON[i][0]) !== -1) return NAMES_BY_ICON[i][1];
    }
    return '';
  }

  function labelButtons(root) {
    var buttons = root.querySelectorAll('button');
    for (var i = 0; i < buttons.length; i++) {
      var button = buttons[i];
      var name = NAMES_BY_ID[button.id];
      if (name && button.getAttribute('aria-label') !== name) {
        button.setAttribute('aria-label', name); // a known button: always its own name
      } else if (!hasName(button)) {
        name = nameOf(button);
        if (name) button.setAttribute('aria-label', name);
      }
    }
  }

  // ---- the closed sidebar is off screen: keep it out of the Tab order -----------------------
  function sidebarInert() {
    var groups = document.querySelectorAll('div.group.peer[data-state]');
    for (var i = 0; i < groups.length; i++) {
      var closed = groups[i].getAttribute('data-state') === 'collapsed';
      if (closed !== groups[i].hasAttribute('inert')) groups[i].toggleAttribute('inert', closed);
    }
  }

  // ---- what the server sends: the index summary, a reopened conversation's mode -------------
  var summaryText = '';

  function showSummary() {
    var starters = document.getElementById('starters');
    var line = document.getElementById('pubmed-index-summary');
    if (!starters || !summaryText) return;
    if (!line) {
      line = document.createElement('p');
      line.id = 'pubmed-index-summary';
      line.className = 'text-muted-foreground text-center px-4';
    }
    if (line.textContent !== summaryText) line.textContent = summaryText; // text, never HTML
    if (line.previousElementSibling !== starters) starters.insertAdjacentElement('afterend', line);
  }

  window.addEventListener('message', function (event) {
    if (event.source !== window || event.origin !== window.location.origin) return;
    var data = event.data && event.data.pubmedAssistant;
    if (!data) return;
    if (typeof data.indexSummary === 'string') {
      summaryText = data.indexSummary;
      showSummary();
    }
    if (typeof data.modeButton !== 'string') return;
    var wanted = data.modeButton;
    var asked = ++modeRequest;
    var started = performance.now();
    // the buttons may be drawn a moment after the message, and are disabled (a click does
    // nothing) while the reopened conversation loads (or an answer runs): try until the wanted
    // one is highlighted, unless the reader picks a mode, sends or starts a new chat meanwhile
    (function select() {
      if (asked !== modeRequest || performance.now() - started > 120000) return;
      var button = document.getElementById('command-' + wanted);
      var selected = document.querySelector('.command-buttons-container button.text-command');
      if (button && selected === button) return;
      if (button && !button.disabled) button.click(); // one click selects it
      setTimeout(select, 100);
    })();
  });

  var modeRequest = 0; // the server's latest mode request; a reader's own choice cancels it
  document.addEventListener('click', function (event) {
    if (event.isTrusted && event.target && event.target.closest &&
        event.target.closest('.command-buttons-container, #chat-submit, #new-chat-button')) {
      modeRequest++;
    }
  }, true);
  document.addEventListener('keydown', function (event) {
    if (event.isTrusted && event.key === 'Enter' && event.target &&
        event.target.id === 'chat-input') modeRequest++; // the reader sends in the mode shown
  }, true);

  // ---- no empty messages ---------------------------------------------------------------------
  var INVISIBLE = /[\s\u200b-\u200d\u2060\ufeff\u202a-\u202e\u2066-\u2069\x00-\x1f\x7f-\x9f]/g;

  function inputIsBlank() {
    var input = document.getElementById('chat-input');
    if (!input) return false;
    var text = input.value !== undefined && input.tagName === 'TEXTAREA' ? input.value
      : input.textContent;
    return (text || '').replace(INVISIBLE, '') === '';
  }

  document.addEventListener('click', function (event) {
    var submit = event.target && event.target.closest && event.target.closest('#chat-submit');
    if (submit && inputIsBlank()) {
      event.preventDefault();
      event.stopPropagation();
    }
  }, true);
  document.addEventListener('keydown', function (event) {
    if (event.key === 'Enter' && !event.shiftKey && event.target &&
        event.target.id === 'chat-input' && inputIsBlank()) {
      event.preventDefault();
      event.stopPropagation();
    }
  }, true);

  function onChange() {
    showSummary();
    guardPanel();
    labelButtons(document);
    sidebarInert();
  }

  new MutationObserver(onChange).observe(document.documentElement, {
    subtree: true, childList: true, characterData: true, attributes: true,
    attributeFilter: ['data-state', 'class', 'id']
  });
  onChange();
})();
