// The console: sign-in, then the screens the credential may see, routed by the URL's hash.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { accessOf, screenScopes, type Access, type Screen } from './access.js';
import { AuditScreen } from './audit.js';
import { LocationScreen } from './location.js';
import { ObservationScreen } from './observation.js';
import { ObservationsScreen } from './observations.js';
import { PlacesScreen, VisitScreen } from './places.js';
import { session, type Credential } from './session.js';
import { SignIn } from './sign-in.js';
import { Loading, ProblemBox } from './ui.js';
import { WebhookScreen, WebhooksScreen } from './webhooks.js';
import './style.css';

const useHash = () => {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const update = () => setHash(location.hash);
    addEventListener('hashchange', update);
    // The hash may have moved between the first render and this effect (a link followed at once, as the
    // sign-in mounts the console): without this the screen stayed on the old one until the next change.
    update();
    return () => removeEventListener('hashchange', update);
  }, []);
  return hash.replace(/^#\/?/, '');
};

const useCredential = () => {
  const [credential, setCredential] = useState<Credential | null>(session.credential());
  useEffect(() => session.subscribe(() => setCredential(session.credential())), []);
  return credential;
};

const nav: { screen: Screen; path: string; label: string }[] = [
  { screen: 'observations', path: 'observations', label: 'Observations' },
  { screen: 'places', path: 'places', label: 'Locations and visits' },
  { screen: 'webhooks', path: 'webhooks', label: 'Webhooks' },
  { screen: 'audit', path: 'audit', label: 'Audit' },
];

const NotAllowed = ({ screen }: { screen: Screen }) => (
  <div class="problem" role="alert">
    <h1 tabIndex={-1}>Not available to this credential</h1>
    <p>This screen needs the scope {screenScopes[screen]}.</p>
  </div>
);

const Route = ({ path, access }: { path: string; access: Access }) => {
  const [first = '', id] = path.split('/');
  const guard = (screen: Screen, element: preact.JSX.Element) =>
    access[screen] ? element : <NotAllowed screen={screen} />;
  switch (first) {
    case 'observations':
      return id
        ? guard('observations', <ObservationScreen id={id} cv={access.cv} placesToo={access.places} />)
        : guard('observations', <ObservationsScreen placesToo={access.places} />);
    case 'places':
      return guard('places', <PlacesScreen visitsToo={access.observations} />);
    case 'locations':
      return id
        ? guard('places', <LocationScreen id={id} visitsToo={access.observations} />)
        : guard('places', <PlacesScreen visitsToo={access.observations} />);
    case 'visits':
      return id
        ? guard('observations', <VisitScreen id={id} placesToo={access.places} />)
        : guard('places', <PlacesScreen visitsToo />);
    case 'webhooks':
      return id ? guard('webhooks', <WebhookScreen id={id} />) : guard('webhooks', <WebhooksScreen />);
    case 'audit':
      return guard('audit', <AuditScreen />);
    default: {
      const home = nav.find((item) => access[item.screen]);
      return home ? (
        <p>
          Start with <a href={`#/${home.path}`}>{home.label}</a>.
        </p>
      ) : (
        <p>This credential may see none of the console's screens.</p>
      );
    }
  }
};

/**
 * The brand, the screens, who is signed in, and Sign out. On a phone the screens and the credential fold
 * into a menu button (a disclosure), which a new screen closes again.
 */
const Header = ({
  credential,
  path,
  access,
}: {
  credential: Credential;
  path: string;
  access: Access | null;
}) => {
  const [open, setOpen] = useState(false);
  useEffect(() => setOpen(false), [path]);
  return (
    <header
      class={open ? 'menu-open' : undefined}
      onKeyDown={(event) => {
        if (event.key !== 'Escape' || !open) return;
        setOpen(false);
        document.querySelector<HTMLElement>('.menu-toggle')?.focus();
      }}
    >
      <span class="brand">Observation console</span>
      <button
        type="button"
        class="menu-toggle"
        aria-expanded={open}
        aria-controls="header-menu"
        onClick={() => setOpen(!open)}
      >
        Menu
      </button>
      <div id="header-menu" class="header-menu">
        <nav aria-label="Screens">
          <ul>
            {nav
              .filter((item) => access?.[item.screen])
              .map((item) => (
                <li key={item.path}>
                  <a href={`#/${item.path}`} aria-current={path.startsWith(item.path) ? 'page' : undefined}>
                    {item.label}
                  </a>
                </li>
              ))}
          </ul>
        </nav>
        <span class="who">
          {credential.kind === 'apiKey' ? 'API key' : credential.email} · {credential.tenantId}
        </span>
      </div>
      <button type="button" class="sign-out" onClick={() => session.signOut()}>
        Sign out
      </button>
    </header>
  );
};

const Console = ({ credential }: { credential: Credential }) => {
  const path = useHash();
  const [access, setAccess] = useState<Access | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    setAccess(null);
    accessOf(credential).then(setAccess, setError);
  }, [credential.kind === 'apiKey' ? credential.key : credential.email]);
  // A new screen: its heading takes the focus, so that keyboard and screen-reader users start there.
  useEffect(() => {
    const heading = document.querySelector<HTMLElement>('main h1');
    if (!heading) return;
    heading.tabIndex = -1;
    heading.focus();
  }, [path, access]);
  return (
    <>
      <a
        class="skip"
        href="#content"
        onClick={(event) => {
          event.preventDefault();
          document.getElementById('content')?.focus();
        }}
      >
        Skip to the content
      </a>
      <Header credential={credential} path={path} access={access} />
      <main id="content" tabIndex={-1}>
        <ProblemBox error={error} />
        {access ? (
          <Route path={path} access={access} />
        ) : error ? null : (
          <Loading what="what this credential may see" />
        )}
      </main>
    </>
  );
};

const App = () => {
  const credential = useCredential();
  return credential ? <Console credential={credential} /> : <SignIn />;
};

const root = document.getElementById('console')!;
// The page's own "Loading the console…" goes: render adds to what the element holds.
root.textContent = '';
render(<App />, root);
